package storm_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/internal/storm"
)

// TestMain lets the test binary be its own workers: started with the
// worker's environment it runs one and exits before any test.
func TestMain(m *testing.M) {
	storm.MaybeWorker()
	// Workers check every commit attempt built from an earlier attempt's
	// reads against one built from fresh reads (catalog/reread.go): a
	// difference fails the commit, which the storms count.
	os.Setenv("ROCKLAKE_VERIFY_REREADS", "1")
	os.Exit(pgtest.Main(m))
}

// stormDuration is how long TestStorm (and TestStormTerminate, when set)
// runs: ROCKLAKE_STORM_SECONDS for a long run, else a few seconds (fewer
// under the race detector).
func stormDuration(t *testing.T) time.Duration {
	if s := os.Getenv("ROCKLAKE_STORM_SECONDS"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n <= 0 {
			t.Fatalf("ROCKLAKE_STORM_SECONDS=%q: want a positive number of seconds", s)
		}
		return time.Duration(n * float64(time.Second))
	}
	if raceEnabled {
		// Under the race detector, beside CI's other packages, writer
		// processes take a second or more to make their first commit:
		// in 2 s one shared writer once made none.
		return 5 * time.Second
	}
	return 3 * time.Second
}

// logDir is where a test's workers log: under ROCKLAKE_STORM_LOGS when
// set, kept for reading after the test, else a temporary directory.
func logDir(t *testing.T) string {
	root := os.Getenv("ROCKLAKE_STORM_LOGS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, t.Name()+"-"+time.Now().Format("150405.000"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker logs in %s", dir)
	return dir
}

func check(t *testing.T, cfg storm.Config) storm.Report {
	t.Helper()
	rep, err := storm.Check(cfg)
	t.Log(rep)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// start starts a storm that is killed if the test ends before it does.
func start(t *testing.T, cfg storm.Config) *storm.Storm {
	t.Helper()
	st, err := storm.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Kill)
	return st
}

// Eight writer processes (four on one table, four on tables of their
// own) and four readers commit and read at once; afterwards every
// acknowledged commit is in the catalog exactly once, in the snapshot it
// was acknowledged with, no refused one is, and no reader saw a torn or
// inconsistent snapshot. Conflicts come back on the shared table only.
func TestStorm(t *testing.T) {
	cfg := storm.Config{
		Catalog: pgtest.URL(t), Dir: logDir(t),
		SharedWriters: 4, SoloWriters: 4, Readers: 4,
		Duration: stormDuration(t), Seed: 1,
	}
	if raceEnabled {
		cfg.SharedWriters, cfg.SoloWriters, cfg.Readers = 2, 2, 2
	}
	st := start(t, cfg)
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	rep := check(t, cfg)
	if rep.Failed+rep.Unknown+rep.Died+rep.ErrorCount > 0 {
		t.Errorf("with no fault injected, %d commits failed, %d had unknown outcomes, %d calls failed: %+v", rep.Failed, rep.Unknown+rep.Died, rep.ErrorCount, rep.Errors[:min(5, len(rep.Errors))])
	}
	if rep.Refused == 0 {
		t.Error("no commit on the shared table was refused with a conflict")
	}
	if rep.ReadsChecked == 0 {
		t.Error("no reader checked a snapshot")
	}
	writersCameBack(t, rep)
	latencyGroupsCover(t, rep)
}

// latencyGroupsCover fails unless the report's latency groups split the
// acknowledged commits twice, by writer group and by fences lost, each
// commit counted once in each split, with ordered percentiles.
func latencyGroupsCover(t *testing.T, rep storm.Report) {
	t.Helper()
	byGroup, byLost := 0, 0
	for _, g := range rep.Latency {
		if g.Commits == 0 || g.P50 > g.P99 || g.P99 > g.Max || g.Max > rep.CommitMax {
			t.Errorf("latency group %s", g)
		}
		if strings.HasPrefix(g.Group, "fence lost") {
			byLost += g.Commits
		} else {
			byGroup += g.Commits
		}
	}
	if byGroup != rep.Acknowledged || byLost != rep.Acknowledged {
		t.Errorf("latency groups count %d commits by writer group and %d by fences lost, of %d acknowledged: %v", byGroup, byLost, rep.Acknowledged, rep.Latency)
	}
}

// writersCameBack fails a writer none of whose commits came back. A
// commit in flight at the deadline still ends: a solo writer has one
// acknowledged, however slow; a shared writer may lose every race, but
// is refused then.
func writersCameBack(t *testing.T, rep storm.Report) {
	t.Helper()
	for id, w := range rep.ByWriter {
		if w.Table == storm.SharedTable && w.Acknowledged+w.Refused == 0 || w.Table != storm.SharedTable && w.Acknowledged == 0 {
			t.Errorf("writer %d (table %s): %d commits acknowledged, %d refused, %d failed", id, w.Table, w.Acknowledged, w.Refused, w.Failed)
		}
	}
}

// The server stops (immediate: a crash) in the middle of a storm and
// comes back a second later. Meanwhile writers get errors that say the
// database is unavailable, promptly; afterwards every writer commits
// again, and nothing acknowledged is lost or doubled.
func TestStormRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private server")
	}
	cl := pgtest.Start(t)
	cfg := storm.Config{
		Catalog: cl.NewDatabase(t), Dir: logDir(t),
		SharedWriters: 2, SoloWriters: 2, Readers: 2,
		Duration: 7 * time.Second, Seed: 2,
	}
	st := start(t, cfg)
	time.Sleep(2 * time.Second)
	down := time.Now()
	cl.Stop(t, "immediate")
	time.Sleep(time.Second)
	cl.Restart(t)
	up := time.Now()
	if err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	rep := check(t, cfg)
	during := 0
	for _, e := range rep.Errors {
		if e.Time.After(down) && e.Time.Before(up.Add(time.Second)) {
			during++
			if !e.Unavailable && !e.Unknown {
				t.Errorf("%s: %s failed while the server was down, and the error says neither that the database is unavailable nor that the outcome is unknown: %s", e.Worker, e.Op, e.Err)
			}
		} else {
			t.Errorf("%s: %s failed at %s, outside the outage (%s to %s): %s", e.Worker, e.Op, e.Time.Format(time.StampMilli), down.Format(time.StampMilli), up.Format(time.StampMilli), e.Err)
		}
	}
	if during == 0 {
		t.Error("no worker saw an error while the server was down")
	}
	// The pool's retries wait out a short outage (pgkv.Options.RetryFor,
	// 20 s); no call may wait much longer.
	if rep.LongestCall > 25*time.Second {
		t.Errorf("a call waited %s", rep.LongestCall)
	}
	// A writer to the shared table may lose every commit after the
	// restart to a real conflict (as writersCameBack allows): refused,
	// it was decided all the same.
	for id, w := range rep.ByWriter {
		decided := w.LastAck.After(up) || w.Table == storm.SharedTable && w.LastRefused.After(up)
		if !decided {
			t.Errorf("writer %d (table %s) had no commit acknowledged after the restart (last at %s; last refused at %s)", id, w.Table, w.LastAck.Format(time.StampMilli), w.LastRefused.Format(time.StampMilli))
		}
	}
}

// An admin connection terminates every rocklake backend of the database
// again and again during a storm; commits cut off that way are retried
// or resolved by their commit token, and nothing acknowledged is lost or
// doubled.
func TestStormTerminate(t *testing.T) {
	if testing.Short() {
		t.Skip("a storm under fire")
	}
	url := pgtest.URL(t)
	cfg := storm.Config{
		Catalog: url, Dir: logDir(t),
		SharedWriters: 2, SoloWriters: 2, Readers: 2,
		Duration: 8 * time.Second, Seed: 3,
	}
	if os.Getenv("ROCKLAKE_STORM_SECONDS") != "" {
		cfg.Duration = stormDuration(t)
	} else if raceEnabled {
		cfg.Duration = 3 * time.Second
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	st := start(t, cfg)
	stormDone := make(chan struct{})
	var werr error
	go func() {
		werr = st.Wait()
		close(stormDone)
	}()
	r := rand.New(rand.NewPCG(3, 3))
	rounds, terminated := 0, 0
	for {
		// Bursts of terminations 50-200 ms apart, then a quiet second:
		// on a loaded machine (CI's packages in parallel) a writer's
		// connect, reads and commit take longer than the gaps of a
		// burst (commits' p99 there: 585 ms), and without the quiet it
		// could not commit before the storm ended (writers of CI runs
		// gave up so, unavailable to the end, or committed nothing).
		pause := time.Duration(50+r.IntN(150)) * time.Millisecond
		if rounds%4 == 3 {
			pause = time.Second
		}
		select {
		case <-stormDone:
		case <-time.After(pause):
			var n int
			err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'rocklake' AND pid <> pg_backend_pid() AND datname = current_database()`).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			rounds++
			terminated += n
			continue
		}
		break
	}
	if werr != nil {
		t.Fatal(werr)
	}
	rep := check(t, cfg)
	t.Logf("%d backends terminated in %d rounds", terminated, rounds)
	if terminated == 0 {
		t.Fatal("no backend was terminated")
	}
	writersCameBack(t, rep)
}

// Writer processes are SIGKILLed twenty times while they commit (alongside
// a writer and a reader that live on). No snapshot is torn, ids stay
// dense, every acknowledged commit is there, and a writer started
// afterwards commits.
func TestStormSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty processes killed")
	}
	cfg := storm.Config{
		Catalog: pgtest.URL(t), Dir: logDir(t),
		SharedWriters: 1, SoloWriters: -1, Readers: 1,
		Duration: 20 * time.Second, Seed: 4,
	}
	st := start(t, cfg)
	r := rand.New(rand.NewPCG(4, 4))
	const kills = 20
	for k := range kills {
		id := 100 + k
		table := storm.SharedTable
		if k%2 == 1 {
			table = storm.SoloTable(id)
		}
		p, err := storm.StartWriter(cfg, id, table)
		if err != nil {
			t.Fatal(err)
		}
		// Long enough for the process to start and open the catalog
		// (tens of milliseconds), then anywhere in its stream of commits.
		select {
		case <-p.Done():
			t.Fatalf("writer %d exited before it was killed: %v", id, p.Wait())
		case <-time.After(time.Duration(150+r.IntN(250)) * time.Millisecond):
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	st.Kill()
	rep := check(t, cfg)
	died := 0
	for k := range kills {
		if w := rep.ByWriter[100+k]; w != nil {
			died += w.Died
		}
	}
	if died == 0 {
		t.Errorf("none of %d kills came during a Commit", kills)
	}
	// The catalog is usable: a new writer commits.
	cfg.Duration = time.Second
	p, err := storm.StartWriter(cfg, 200, storm.SharedTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	rep = check(t, cfg)
	if w := rep.ByWriter[200]; w == nil || w.Acknowledged == 0 {
		t.Errorf("the writer started after the kills committed nothing: %+v", w)
	}
}
