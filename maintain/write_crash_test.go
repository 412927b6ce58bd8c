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
	for i := int64(0); batches == 0 || i < int64(batches); i++ {
		b := worker*1_000_000 + i
		q := fmt.Sprintf("INSERT INTO t SELECT %d AS b, i FROM range(%d) r(i)", b, batchRows(b))
		for attempt := 0; ; attempt++ {
			_, err = Write(context.Background(), e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
			if err == nil || attempt == 20 || !strings.Contains(err.Error(), catalog.ErrConflict.Error()) {
				break
			}
		}
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		fmt.Fprintf(log, "%d\n", b)
		if err := log.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// runWriter starts TestWriteChild; its output is kept in out.
func runWriter(t *testing.T, loc, log string, worker, batches int, out *bytes.Buffer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ROCKLAKE_WRITE_CATALOG="+loc, "ROCKLAKE_WRITE_LOG="+log,
		fmt.Sprintf("ROCKLAKE_WRITE_WORKER=%d", worker), fmt.Sprintf("ROCKLAKE_WRITE_BATCHES=%d", batches))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkBatches fails unless t holds every acknowledged batch whole and
// once, and no batch in part; it returns the batches it holds.
func checkBatches(t *testing.T, e *engine.Engine, logs ...string) map[int64]int64 {
	t.Helper()
	res, err := e.Query(context.Background(), "SELECT b, count(*), count(DISTINCT i) FROM t GROUP BY b", engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	held := map[int64]int64{}
	for _, row := range res.Rows {
		b, _ := strconv.ParseInt(*row[0], 10, 64)
		n, _ := strconv.ParseInt(*row[1], 10, 64)
		d, _ := strconv.ParseInt(*row[2], 10, 64)
		if n != batchRows(b) || d != n {
			t.Fatalf("batch %d: %d rows (%d distinct), not %d: a write committed in part or twice", b, n, d, batchRows(b))
		}
		held[b] = n
	}
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue // the writer died before its first acknowledgement
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			b, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				continue // a line cut off by the kill
			}
			if _, ok := held[b]; !ok {
				f.Close()
				t.Fatalf("acknowledged batch %d is not in the table", b)
			}
		}
		f.Close()
	}
	return held
}

// A writer killed with SIGKILL at any moment leaves no committed part of a
// write: every acknowledged INSERT is there whole, no other batch is there
// in part, and what it had written but not registered is found and removed
// by DeleteOrphans (cleanup --orphans) without touching a live file.
func TestWriteKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	kills := 50
	if s := os.Getenv("ROCKLAKE_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	loc := filepath.Join(dir, "lake")
	c, err := catalog.Create(loc, catalog.Options{})
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
		cmd := runWriter(t, loc, log, k, 0, &bytes.Buffer{})
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
	defer c.Close()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	held := checkBatches(t, e, log)
	orph, err := c.DeleteOrphans(catalog.OrphanOptions{Grace: -1})
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
	t.Logf("%d kills: %d batches committed; cleanup --orphans found %+v", kills, len(held), *orph)
}

// Writers in 8 processes appending to one table of a PostgreSQL catalog
// all commit (rebuilt on the newer state, their small files merged by
// whoever comes next), and every acknowledged row is there once.
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
	const workers, batches = 8, 12
	var wg sync.WaitGroup
	errs := make([]error, workers)
	var logs []string
	outs := make([]bytes.Buffer, workers)
	for w := range workers {
		logs = append(logs, filepath.Join(dir, fmt.Sprintf("acked-%d", w)))
		cmd := runWriter(t, loc, logs[w], w, batches, &outs[w])
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
	if len(held) != workers*batches {
		t.Fatalf("%d batches in the table, %d written", len(held), workers*batches)
	}
	files := liveFiles(t, c)
	t.Logf("%d processes × %d inserts: all committed, %d live files", workers, batches, len(files))
}
