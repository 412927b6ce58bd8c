// Command startup measures what a new rocklake process costs before and
// around its work: each command runs as a process of its own, -runs times,
// every command once per round so that a load change on the machine falls
// on all of them alike, and the median wall and CPU (user + system) times
// are printed and written as JSON (-json).
//
// The baseline is a Go program that opens an in-memory DuckDB through the
// same duckdb-go as rocklake, runs SELECT 1 and exits; beside it, the same
// program not calling DuckDB (linking it only) and one not linking it at
// all, to show what linking DuckDB costs a process that never uses it. All
// three are built from files written to a temporary directory, with
// rocklake's go.mod, so they use exactly its versions.
//
// The floor: the first and the last of those programs again, each with a
// blank import of every package cmd/rocklake imports (go list, so the list
// follows the command), built inside rocklake's module through an overlay
// (baseline.BuildFloor). "go, rocklake's packages linked, not called"
// pays every package initialisation and the loading of a binary of
// rocklake's dependencies and does nothing; "go, rocklake's packages, DuckDB
// SELECT 1" also opens DuckDB and runs SELECT 1. What rocklake takes above
// them is its own work, not what it links. The catalogs, of
// -files files each, are registered straight from synthetic statistics as
// in bench/plan.
//
// -compare NAME=PATH times other rocklake binaries (a build from before a
// change, say) in the same rounds. Last, catalog.Open is timed in this
// process, read-write against read-only, and `rocklake version` is run
// with GODEBUG=inittrace=1 to list the package initialisations that cost
// most.
//
//	go run ./bench/startup -files 10000,100000 -runs 41 -json bench/results/startup.json
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rocklake/rocklake/bench/internal/baseline"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
)

// Process is one command, run as a new process, over all rounds.
type Process struct {
	Binary  string  `json:"binary"`
	Command string  `json:"command"`
	WallMS  float64 `json:"wall_ms"`
	CPUMS   float64 `json:"cpu_ms"`
	// VsDuckDB is WallMS over the DuckDB SELECT 1 baseline's, same rounds.
	VsDuckDB float64 `json:"vs_duckdb_select_1"`
	// VsFloor is WallMS over the floor's (rocklake's packages, DuckDB
	// SELECT 1), same rounds.
	VsFloor float64 `json:"vs_floor_select_1"`
	// BinaryBytes is the size of the executable.
	BinaryBytes int64 `json:"binary_bytes,omitempty"`
}

// Open is catalog.Open and Close of one catalog in this process.
type Open struct {
	Files       int     `json:"files"`
	ReadWriteMS float64 `json:"read_write_ms"`
	ReadOnlyMS  float64 `json:"read_only_ms"`
}

// Init is one package's initialisation in `rocklake version`.
type Init struct {
	Package string  `json:"package"`
	MS      float64 `json:"ms"`
	Bytes   int64   `json:"bytes"`
}

// InitTrace sums a binary's package initialisations.
type InitTrace struct {
	Binary   string  `json:"binary"`
	Packages int     `json:"packages"`
	TotalMS  float64 `json:"total_ms"`
	Top      []Init  `json:"top"`
}

// Output is the JSON written with -json.
type Output struct {
	Runs int `json:"runs"`
	// LoadBefore and LoadAfter are the machine's load averages (1, 5, 15
	// minutes) before and after the timed rounds.
	LoadBefore string      `json:"load_average_before,omitempty"`
	LoadAfter  string      `json:"load_average_after,omitempty"`
	Processes  []Process   `json:"processes"`
	Opens      []Open      `json:"catalog_open"`
	InitTrace  []InitTrace `json:"inittrace"`
}

// job is one command line to time.
type job struct {
	binary, label string
	args          []string
	wall, cpu     []time.Duration
}

func main() {
	sizes := flag.String("files", "10000,100000", "files in each catalog, comma-separated")
	runs := flag.Int("runs", 31, "timed rounds (each runs every command once)")
	rocklake := flag.String("rocklake", "", "the rocklake binary to time (default: build ./cmd/rocklake)")
	compare := flag.String("compare", "", "more rocklake binaries to time in the same rounds: NAME=PATH, comma-separated")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	flag.Parse()
	ns, err := results.Sizes(*sizes, 2)
	if err != nil {
		log.Fatalf("-files: %v", err)
	}
	tmp, err := os.MkdirTemp("", "rocklake-bench-startup-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	root, err := baseline.ModuleRoot()
	if err != nil {
		log.Fatal(err)
	}
	bins := []struct{ name, path string }{{"rocklake", *rocklake}}
	if bins[0].path == "" {
		bins[0].path = filepath.Join(tmp, "rocklake")
		baseline.GoBuild(root, bins[0].path, "./cmd/rocklake")
	} else {
		bins[0].path = baseline.FreshCopy(bins[0].path, tmp, "rocklake")
	}
	if *compare != "" {
		for i, nv := range strings.Split(*compare, ",") {
			name, path, ok := strings.Cut(nv, "=")
			if !ok {
				log.Fatalf("-compare %q: want NAME=PATH", nv)
			}
			bins = append(bins, struct{ name, path string }{name, baseline.FreshCopy(path, tmp, fmt.Sprintf("compare-%d", i))})
		}
	}
	base := buildBaselines(root, tmp)

	var cats []string
	for _, n := range ns {
		cats = append(cats, makeCatalog(filepath.Join(tmp, fmt.Sprintf("lake-%d", n)), n))
	}

	selectOne := &job{binary: "go, DuckDB SELECT 1", args: []string{base.selectOne}}
	floorSelectOne := &job{binary: "go, rocklake's packages, DuckDB SELECT 1", args: []string{base.floorSelectOne}}
	jobs := []*job{
		{binary: "go, no DuckDB linked", args: []string{base.hello}},
		{binary: "go, DuckDB linked, not called", args: []string{base.linked}},
		selectOne,
		{binary: "go, rocklake's packages linked, not called", args: []string{base.floor}},
		floorSelectOne,
	}
	for _, b := range bins {
		add := func(label string, args ...string) {
			jobs = append(jobs, &job{binary: b.name, label: label, args: append([]string{b.path}, args...)})
		}
		add("version", "version")
		add("--help", "--help")
		add("query 'SELECT 1'", "--catalog", cats[0], "query", "SELECT 1")
		for i, n := range ns {
			add(fmt.Sprintf("snapshots (%d files)", n), "--catalog", cats[i], "snapshots")
			add(fmt.Sprintf("plan (%d files)", n), "--catalog", cats[i], "plan", synth.Table, synth.Predicates(n)[0].SQL)
		}
	}
	// Two rounds warm the page cache; a command a -compare binary lacks
	// (a build without the SQL commands, say) is left out.
	for range 2 {
		kept := jobs[:0]
		for _, j := range jobs {
			if _, _, err := runOnce(j); err != nil {
				if j.binary == "rocklake" || j.label == "" {
					log.Fatal(err)
				}
				fmt.Printf("%s: left out: %v\n", j.binary, err)
				continue
			}
			kept = append(kept, j)
		}
		jobs = kept
	}
	loadBefore := results.LoadAverage()
	fmt.Printf("%d rounds of %d commands, each a new process (load average %s)\n", *runs, len(jobs), loadBefore)
	for round := range *runs {
		// Rotate the order so that no command always follows another.
		for k := range jobs {
			j := jobs[(k+round)%len(jobs)]
			wall, cpu, err := runOnce(j)
			if err != nil {
				log.Fatal(err)
			}
			j.wall, j.cpu = append(j.wall, wall), append(j.cpu, cpu)
		}
	}

	out := Output{Runs: *runs, LoadBefore: loadBefore, LoadAfter: results.LoadAverage()}
	fmt.Printf("load average after the rounds: %s\n", out.LoadAfter)
	duck, floor := results.MedianMS(selectOne.wall), results.MedianMS(floorSelectOne.wall)
	fmt.Printf("\n%-42s %-26s %9s %9s %9s %9s %8s\n", "BINARY", "COMMAND", "WALL ms", "CPU ms", "/SELECT 1", "/FLOOR", "MB")
	for _, j := range jobs {
		p := Process{Binary: j.binary, Command: j.label, WallMS: results.MedianMS(j.wall), CPUMS: results.MedianMS(j.cpu)}
		p.VsDuckDB, p.VsFloor = round2(p.WallMS/duck), round2(p.WallMS/floor)
		if st, err := os.Stat(j.args[0]); err == nil {
			p.BinaryBytes = st.Size()
		}
		fmt.Printf("%-42s %-26s %9.2f %9.2f %9.2f %9.2f %8.1f\n", p.Binary, p.Command, p.WallMS, p.CPUMS, p.VsDuckDB, p.VsFloor, float64(p.BinaryBytes)/1e6)
		out.Processes = append(out.Processes, p)
	}
	fmt.Println("/FLOOR: over the floor, a program linking every package cmd/rocklake imports that runs DuckDB's SELECT 1")

	fmt.Printf("\ncatalog.Open and Close in this process, median of %d\n", *runs)
	for i, n := range ns {
		o := timeOpens(cats[i], n, *runs)
		fmt.Printf("%8d files   read-write %7.2f ms   read-only %7.2f ms\n", n, o.ReadWriteMS, o.ReadOnlyMS)
		out.Opens = append(out.Opens, o)
	}

	for _, b := range append(bins, struct{ name, path string }{"go, rocklake's packages linked, not called", base.floor}) {
		it := initTrace(b.name, b.path, 11)
		fmt.Printf("\n%s version: %d package inits, %.2f ms in all (median of 11); the costliest:\n", b.name, it.Packages, it.TotalMS)
		for _, p := range it.Top {
			fmt.Printf("  %6.3f ms %9d B  %s\n", p.MS, p.Bytes, p.Package)
		}
		out.InitTrace = append(out.InitTrace, it)
	}
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		log.Fatal(err)
	}
}

func round2(x float64) float64 { return float64(int(x*100+0.5)) / 100 }

// runOnce runs j and returns its wall time and the CPU time it used.
func runOnce(j *job) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(j.args[0], j.args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(j.args, " "), err, strings.TrimSpace(stderr.String()))
	}
	wall = time.Since(t)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// baselines are the paths of the programs rocklake is measured against.
type baselines struct{ hello, linked, selectOne, floor, floorSelectOne string }

const linkedSrc = `package main

import (
	"fmt"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() { fmt.Print("") }
`

const helloSrc = `package main

import "fmt"

func main() { fmt.Print("") }
`

// buildBaselines writes the baseline programs into a module of their own,
// whose go.mod is rocklake's (its versions, its go.sum), and builds them.
func buildBaselines(root, tmp string) baselines {
	b := baselines{hello: filepath.Join(tmp, "hello"), linked: filepath.Join(tmp, "linked"), selectOne: filepath.Join(tmp, "selectone"),
		floor: filepath.Join(tmp, "floor"), floorSelectOne: filepath.Join(tmp, "floorselectone")}
	baseline.Build(root, filepath.Join(tmp, "baseline"), map[string]string{
		"selectone/main.go": baseline.SelectOneSrc,
		"linked/main.go":    linkedSrc,
		"hello/main.go":     helloSrc,
	}, map[string]string{"./hello": b.hello, "./linked": b.linked, "./selectone": b.selectOne})
	baseline.BuildFloor(root, "benchfloor", linkedSrc, b.floor)
	baseline.BuildFloor(root, "benchfloorselectone", baseline.SelectOneSrc, b.floorSelectOne)
	return b
}

// makeCatalog registers n files of synthetic statistics into a new
// catalog in dir, compacted as bench/plan leaves it.
func makeCatalog(dir string, n int) string {
	t := time.Now()
	c, err := catalog.Create(dir, catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := synth.Build(c, n, 5000); err != nil {
		log.Fatal(err)
	}
	if err := c.CompactStore(); err != nil {
		log.Fatal(err)
	}
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("catalog of %d files in %.1fs\n", n, time.Since(t).Seconds())
	return dir
}

// timeOpens times catalog.Open and Close of dir, read-write and read-only
// alternately.
func timeOpens(dir string, n, runs int) Open {
	var rw, ro []time.Duration
	for range runs {
		for _, readOnly := range []bool{false, true} {
			t := time.Now()
			c, err := catalog.Open(dir, catalog.Options{Pebble: kv.PebbleOptions{ReadOnly: readOnly}})
			if err != nil {
				log.Fatal(err)
			}
			if err := c.Close(); err != nil {
				log.Fatal(err)
			}
			if readOnly {
				ro = append(ro, time.Since(t))
			} else {
				rw = append(rw, time.Since(t))
			}
		}
	}
	return Open{Files: n, ReadWriteMS: results.MedianMS(rw), ReadOnlyMS: results.MedianMS(ro)}
}

// initTrace runs `path version` with GODEBUG=inittrace=1 runs times and
// takes, per package, the median of its clock times.
func initTrace(name, path string, runs int) InitTrace {
	clock := map[string][]float64{}
	bytesOf := map[string]int64{}
	var totals []float64
	for range runs {
		cmd := exec.Command(path, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("%s version: %v", path, err)
		}
		total := 0.0
		// init PKG @T ms, CLOCK ms clock, BYTES bytes, ALLOCS allocs
		sc := bufio.NewScanner(&stderr)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 9 || f[0] != "init" {
				continue
			}
			ms, err1 := strconv.ParseFloat(f[4], 64)
			b, err2 := strconv.ParseInt(f[7], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			clock[f[1]] = append(clock[f[1]], ms)
			bytesOf[f[1]] = b
			total += ms
		}
		totals = append(totals, total)
	}
	it := InitTrace{Binary: name, Packages: len(clock), TotalMS: round3(median(totals))}
	for pkg, ms := range clock {
		it.Top = append(it.Top, Init{Package: pkg, MS: round3(median(ms)), Bytes: bytesOf[pkg]})
	}
	sort.Slice(it.Top, func(i, j int) bool { return it.Top[i].MS > it.Top[j].MS })
	it.Top = it.Top[:min(10, len(it.Top))]
	return it
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func round3(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }
