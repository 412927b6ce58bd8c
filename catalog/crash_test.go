package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/stats"
)

// TestCrashChild is the writer the crash test kills: it commits snapshots
// as fast as it can, each adding files with stats to two tables or
// removing one (narrowing the table stats). It runs only when the parent
// sets ROCKLAKE_CRASH_DIR.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("ROCKLAKE_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashConsistency")
	}
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := strconv.ParseUint(os.Getenv("ROCKLAKE_CRASH_SEED"), 10, 64)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; ; i++ {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		rd, _ := c.Read(Latest)
		tb, _ := rd.Table("a")
		files, _ := rd.Files(tb.ID)
		rd.Close()
		if len(files) > 3 && r.IntN(4) == 0 {
			tx.RemoveFiles("a", files[r.IntN(len(files))].ID)
		} else {
			n := 1 + r.IntN(20)
			var nfs []NewFile
			for j := range n {
				lo := r.Int64N(1000)
				nfs = append(nfs, intFile(t, fmt.Sprintf("s%d-%d-%d", seed, i, j), lo, lo+r.Int64N(100), r.Int64N(3)))
			}
			tx.AddFiles("a", nfs...)
			tx.AddFiles("b", intFile(t, fmt.Sprintf("b%d-%d", seed, i), 0, 9, 0))
		}
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashConsistency kills a committing child process with SIGKILL at
// random moments, reopens the catalog each time and checks that what it
// finds is whole: every visible file has its stats rows, table stats equal
// a fold of the file stats, snapshot ids and counters never go backwards.
func TestCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	kills := 50
	if s := os.Getenv("ROCKLAKE_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	c, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable("a", []ColumnDef{{Name: "x", Type: "bigint"}})
	tx.CreateTable("b", []ColumnDef{{Name: "x", Type: "bigint"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	r := rand.New(rand.NewPCG(77, 78))
	var lastSnap, lastNextFile int64
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ROCKLAKE_CRASH_DIR="+dir, fmt.Sprintf("ROCKLAKE_CRASH_SEED=%d", k))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Varied timing: sometimes before the catalog is even open,
		// mostly in the middle of a stream of commits.
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()

		c, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		snaps, err := c.Snapshots()
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		head := snaps[len(snaps)-1]
		if head.ID < lastSnap || head.NextFileID < lastNextFile {
			t.Fatalf("kill %d: snapshot %d / next_file_id %d went backwards from %d / %d", k, head.ID, head.NextFileID, lastSnap, lastNextFile)
		}
		lastSnap, lastNextFile = head.ID, head.NextFileID
		for i := 1; i < len(snaps); i++ {
			if snaps[i].ID != snaps[i-1].ID+1 || snaps[i].NextFileID < snaps[i-1].NextFileID {
				t.Fatalf("kill %d: snapshot ids or counters not monotonic at %d", k, snaps[i].ID)
			}
		}
		// Check the newest snapshot and a few older ones whole.
		for _, s := range []int64{head.ID, head.ID / 2, max(head.ID-1, 1)} {
			if err := checkWhole(c, s); err != nil {
				t.Fatalf("kill %d, snapshot %d: %v", k, s, err)
			}
		}
		c.Close()
	}
	t.Logf("%d kills survived; %d snapshots committed", kills, lastSnap)
}

// checkWhole verifies the invariants of one snapshot.
func checkWhole(c *Catalog, snap int64) error {
	r, err := c.Read(snap)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, name := range []string{"a", "b"} {
		tb, err := r.Table(name)
		if err != nil {
			return err
		}
		files, err := r.Files(tb.ID)
		if err != nil {
			return err
		}
		n := 0
		if err := r.FileColumnStats(tb.ID, 1, func(int64, *stats.Column) error { n++; return nil }); err != nil {
			return err
		}
		if n != len(files) {
			return fmt.Errorf("table %s: %d files but %d stats rows", name, len(files), n)
		}
		for _, f := range files {
			rgs, err := r.RowGroupStats(tb.ID, 1, f.ID)
			if err != nil || len(rgs) != 1 {
				return fmt.Errorf("table %s file %d: %d row-group rows (%v)", name, f.ID, len(rgs), err)
			}
		}
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			return err
		}
		fresh, err := r.computeTableStats(tb.ID)
		if err != nil {
			return err
		}
		a, b := ts.Columns[1], fresh.Columns[1]
		if ts.RecordCount != fresh.RecordCount || ts.FileCount != fresh.FileCount ||
			string(a.Min.V) != string(b.Min.V) || string(a.Max.V) != string(b.Max.V) || a.ContainsNull != b.ContainsNull {
			return errors.New("table stats differ from the fold of the file stats")
		}
	}
	return nil
}

// TestHoldChild opens a catalog and holds it until killed.
func TestHoldChild(t *testing.T) {
	dir := os.Getenv("ROCKLAKE_HOLD_DIR")
	if dir == "" {
		t.Skip("run by TestLockedByAnotherProcess")
	}
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Println("holding")
	time.Sleep(time.Minute)
}

// TestLockedByAnotherProcess: a catalog another process has open is
// refused with ErrLocked, and opens again once that process is gone.
func TestLockedByAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	c, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ROCKLAKE_HOLD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	var seen string
	for !strings.Contains(seen, "holding") && time.Now().Before(deadline) {
		n, err := out.Read(buf)
		seen += string(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(seen, "holding") {
		_ = cmd.Process.Kill()
		t.Fatalf("child did not open the catalog: %s", seen)
	}
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("open while another process holds it: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	c, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after the holder died: %v", err)
	}
	c.Close()
}
