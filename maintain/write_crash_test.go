package maintain

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

// batchRows is how many rows batch b inserts: every reader can tell a
// whole batch from a part of one.
func batchRows(b int64) int64 { return 1 + (b*7919)%40 }

// TestWriteChild is the writer the crash and concurrency tests run in a
// process of its own: INSERT after INSERT of whole batches into t, each
// acknowledged (appended to a log and synced) only once Write returned.
// It runs only when the parent sets ROCKLAKE_WRITE_CATALOG.
func TestWriteChild(t *testing.T) {
	loc := os.Getenv("ROCKLAKE_WRITE_CATALOG")
	if loc == "" {
		t.Skip("run by TestWriteKilled and TestWriteAppendersAcrossProcesses")
	}
	worker, _ := strconv.ParseInt(os.Getenv("ROCKLAKE_WRITE_WORKER"), 10, 64)
	batches, _ := strconv.Atoi(os.Getenv("ROCKLAKE_WRITE_BATCHES")) // 0: until killed
	c, err := catalog.Open(loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	log, err := os.OpenFile(os.Getenv("ROCKLAKE_WRITE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// With ROCKLAKE_WRITE_CHANGES set, some steps delete or update a
	// whole batch this writer inserted before, instead of inserting one:
	// the intent is logged first ("?-b", "?~b"), the acknowledgement after
	// ("-b", "~b"), so that a kill between the commit and the
	// acknowledgement is told apart from a lost change.
	changes := os.Getenv("ROCKLAKE_WRITE_CHANGES") != ""
	rnd := rand.New(rand.NewPCG(uint64(worker), 7))
	var mine []int64 // batches inserted and not deleted
	ack := func(line string) {
		fmt.Fprintln(log, line)
		if err := log.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(q string) {
		var err error
		for attempt := 0; ; attempt++ {
			_, err = Write(context.Background(), e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
			if err == nil || attempt == 50 || !strings.Contains(err.Error(), catalog.ErrConflict.Error()) {
				break
			}
			time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := int64(0); batches == 0 || i < int64(batches); i++ {
		if changes && len(mine) > 0 && rnd.IntN(3) == 0 {
			k := rnd.IntN(len(mine))
			b := mine[k]
			if rnd.IntN(2) == 0 {
				ack(fmt.Sprintf("?-%d", b))
				exec(fmt.Sprintf("DELETE FROM t WHERE b = %d", b))
				ack(fmt.Sprintf("-%d", b))
				mine = append(mine[:k], mine[k+1:]...)
			} else {
				ack(fmt.Sprintf("?~%d", b))
				exec(fmt.Sprintf("UPDATE t SET i = i + 1000 WHERE b = %d AND i < 1000", b))
				ack(fmt.Sprintf("~%d", b))
			}
			continue
		}
		b := worker*1_000_000 + i
		exec(fmt.Sprintf("INSERT INTO t SELECT %d AS b, i FROM range(%d) r(i)", b, batchRows(b)))
		ack(fmt.Sprint(b))
		mine = append(mine, b)
	}
}

// runWriter starts TestWriteChild; its output is kept in out. With
// changes, it deletes and updates some of its batches too.
func runWriter(t *testing.T, loc, log string, worker, batches int, changes bool, out *bytes.Buffer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ROCKLAKE_WRITE_CATALOG="+loc, "ROCKLAKE_WRITE_LOG="+log,
		fmt.Sprintf("ROCKLAKE_WRITE_WORKER=%d", worker), fmt.Sprintf("ROCKLAKE_WRITE_BATCHES=%d", batches))
	if changes {
		cmd.Env = append(cmd.Env, "ROCKLAKE_WRITE_CHANGES=1")
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkBatches fails unless t holds every acknowledged batch whole and
// once, no batch in part and none updated in part, no batch whose delete
// was acknowledged, and every batch whose update was acknowledged
// updated; it returns the batches it holds.
func checkBatches(t *testing.T, e *engine.Engine, logs ...string) map[int64]int64 {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT b, count(*), count(DISTINCT i), min(i) >= 1000, max(i) >= 1000 FROM t GROUP BY b",
		engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	held := map[int64]int64{}
	updated := map[int64]bool{}
	for _, row := range res.Rows {
		b, _ := strconv.ParseInt(*row[0], 10, 64)
		n, _ := strconv.ParseInt(*row[1], 10, 64)
		d, _ := strconv.ParseInt(*row[2], 10, 64)
		if n != batchRows(b) || d != n {
			t.Fatalf("batch %d: %d rows (%d distinct), not %d: a write committed in part or twice", b, n, d, batchRows(b))
		}
		if *row[3] != *row[4] {
			t.Fatalf("batch %d: updated in part", b)
		}
		held[b], updated[b] = n, *row[3] == "true"
	}
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue // the writer died before its first acknowledgement
		}
		inserted, deleted, mayDelete, wasUpdated := map[int64]bool{}, map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			var into map[int64]bool
			switch {
			case strings.HasPrefix(line, "?-"):
				into, line = mayDelete, line[2:]
			case strings.HasPrefix(line, "?~"):
				continue
			case strings.HasPrefix(line, "-"):
				into, line = deleted, line[1:]
			case strings.HasPrefix(line, "~"):
				into, line = wasUpdated, line[1:]
			default:
				into = inserted
			}
			b, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				continue // a line cut off by the kill
			}
			into[b] = true
		}
		f.Close()
		for b := range inserted {
			_, ok := held[b]
			switch {
			case deleted[b] && ok:
				t.Fatalf("batch %d: its delete was acknowledged, but it is in the table", b)
			case !ok && !mayDelete[b]:
				t.Fatalf("acknowledged batch %d is not in the table", b)
			case ok && wasUpdated[b] && !updated[b]:
				t.Fatalf("batch %d: its update was acknowledged, but it is not updated", b)
			}
		}
	}
	return held
}

// A writer killed with SIGKILL at any moment leaves no committed part of a
// write: every acknowledged INSERT is there whole, no other batch is there
// in part, no DELETE or UPDATE is committed in part (every other writer
// deletes and updates whole batches too, by rewriting or by delete files),
// and what it had written but not registered is found and removed
// by DeleteOrphans (cleanup --orphans) without touching a live file.
func TestWriteKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	kills := 50
	if s := os.Getenv("ROCKLAKE_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	killWriters(t, kills, "", nil)
}

// The same, with the table's files in an object store (versitygw): a killed
// writer's uploads are found under their prefix's expired lease and
// deleted, and no lease or tombstone is left; every object left under
// _rocklake/ is one a snapshot registered.
func TestWriteKilledObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	kills := 20
	if s := os.Getenv("ROCKLAKE_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	c := killWriters(t, kills, "s3://lake/root/", st)
	registered := map[string]bool{}
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range snaps {
		r, err := c.Read(sn.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tb, err := r.Table("t"); err == nil {
			files, err := r.Files(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				registered[f.Location(tb)] = true
			}
			dels, err := r.DeleteFiles(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dels {
				registered[d.Location(tb)] = true
			}
		}
		r.Close()
	}
	keys := srv.Keys(t, "lake", "root/_rocklake/")
	for _, k := range keys {
		if !registered["s3://lake/"+k] {
			t.Errorf("left under _rocklake/ and registered by no snapshot: %s", k)
		}
	}
	t.Logf("%d objects left under _rocklake/, all registered", len(keys))
}

// killWriters kills writers of a table in a catalog with the data root
// root ("" for none) kills times, at random moments, then checks the
// table and cleans up their orphans (objects through store); it returns
// the catalog, open until the test ends.
func killWriters(t *testing.T, kills int, root string, store catalog.ObjectStore) *catalog.Catalog {
	dir := t.TempDir()
	loc := filepath.Join(dir, "lake")
	c, err := catalog.Create(loc, catalog.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "b", Type: "BIGINT"}, {Name: "i", Type: "BIGINT"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	log := filepath.Join(dir, "acked")
	r := rand.New(rand.NewPCG(36, 37))
	for k := range kills {
		if k%2 == 1 {
			// Writers that change rows take turns at copy-on-write and
			// merge-on-read, so that a kill finds either kind of commit
			// under way, and a table with delete files changed by
			// rewriting too.
			c, err := catalog.Open(loc, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			alterTable(t, c, "t", "set", "option", "delete_mode", "=", []string{catalog.MergeOnRead, catalog.CopyOnWrite}[k/2%2])
			c.Close()
		}
		cmd := runWriter(t, loc, log, k, 0, k%2 == 1, &bytes.Buffer{})
		// Mostly in the middle of a stream of writes (a process takes a
		// few hundred milliseconds to start DuckDB and open the catalog).
		time.Sleep(time.Duration(200+r.IntN(900)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	c, err = catalog.Open(loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	held := checkBatches(t, e, log)
	orph, err := c.DeleteOrphans(catalog.OrphanOptions{Grace: -1, Objects: store})
	if err != nil {
		t.Fatal(err)
	}
	if after := checkBatches(t, e, log); len(after) != len(held) {
		t.Fatalf("cleanup changed the table: %d batches, then %d", len(held), len(after))
	}
	rep, err := Verify(context.Background(), e, "t", catalog.Latest, false)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("after cleanup: %v %+v", err, rep)
	}
	// A killed writer's lease names a process that is gone: its files
	// went at once, whatever the lease's age.
	if len(orph.InUse) > 0 {
		t.Fatalf("directories of killed writers kept as in use: %v", orph.InUse)
	}
	if len(orph.Expired) == 0 {
		t.Fatalf("%d writers killed, and not one left a lease behind: %+v", kills, orph)
	}
	if again, err := c.DeleteOrphans(catalog.OrphanOptions{DryRun: true, Grace: -1, Objects: store}); err != nil ||
		len(again.Deleted)+len(again.InUse)+len(again.Expired)+len(again.Waiting) > 0 {
		t.Fatalf("a second cleanup --orphans: %+v %v", again, err)
	}
	t.Logf("%d kills: %d batches committed; cleanup --orphans found %+v", kills, len(held), *orph)
	return c
}

// Writers in 8 processes appending to one table of a PostgreSQL catalog,
// and deleting and updating batches they appended by delete files
// (merge-on-read), all commit (rebuilt on
// the newer state, their small files merged by whoever comes next; a
// change that lost a race for a file to another retried), and every
// acknowledged row is there once, every acknowledged change made.
func TestWriteAppendersAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	loc := pgtest.URL(t)
	if loc == "" {
		t.Skip("no PostgreSQL")
	}
	dir := t.TempDir()
	c, err := catalog.Create(loc, catalog.Options{DataRoot: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tx, _ := c.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "b", Type: "BIGINT"}, {Name: "i", Type: "BIGINT"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	alterTable(t, c, "t", "set", "option", "delete_mode", "=", catalog.MergeOnRead)
	const workers, batches = 8, 12
	var wg sync.WaitGroup
	errs := make([]error, workers)
	var logs []string
	outs := make([]bytes.Buffer, workers)
	for w := range workers {
		logs = append(logs, filepath.Join(dir, fmt.Sprintf("acked-%d", w)))
		cmd := runWriter(t, loc, logs[w], w, batches, true, &outs[w])
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = cmd.Wait()
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v\n%s", w, err, outs[w].String())
		}
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	held := checkBatches(t, e, logs...)
	// Every writer ran to its end: what it acknowledged is all it did.
	live, changed := 0, 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Fields(string(b)) {
			switch {
			case line[0] == '-':
				live, changed = live-1, changed+1
			case line[0] == '~':
				changed++
			case line[0] != '?':
				live++
			}
		}
	}
	if len(held) != live {
		t.Fatalf("%d batches in the table, %d inserted and not deleted", len(held), live)
	}
	files := liveFiles(t, c)
	t.Logf("%d processes × %d statements (%d of them deletes and updates): all committed, %d live files", workers, batches, changed, len(files))
}
