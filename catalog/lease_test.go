package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv/kvtest"
)

// deadPID is the id of a process that ran on this host and has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a process to get a dead one's id: %v", err)
	}
	return cmd.Process.Pid
}

func lakeCatalog(t *testing.T) (*Catalog, string) {
	t.Helper()
	data := t.TempDir()
	c, err := CreateInStore(kvtest.Store(t), Options{DataRoot: data})
	if err != nil {
		t.Fatal(err)
	}
	return c, c.RewriteRoot()
}

// Every kind of lease a directory can hold, with files of both ages, in
// dry runs and real ones: orphan cleanup takes a file exactly when it is
// old and its directory's lease is not live (none; expired; or written by
// a process of this host that has died), and removes every lease that is
// not live, never a live one.
func TestOrphanCleanupHonoursLeases(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	dead := deadPID(t)
	myStart, ok := processStart(os.Getpid())
	if !ok {
		t.Skip("no /proc/self/stat: process start times are unknown here")
	}
	stale := time.Now().Add(-LeaseExpiry - time.Minute)
	type lease struct {
		name    string
		body    string // "" for no lease file
		touched time.Time
		live    bool
	}
	leases := []lease{
		{"none", "", time.Time{}, false},
		{"this process", fmt.Sprintf("host=%s pid=%d\n", host, os.Getpid()), time.Now(), true},
		{"this process, its start time", fmt.Sprintf("host=%s pid=%d start=%s\n", host, os.Getpid(), myStart), time.Now(), true},
		{"this process's id, another start time (an id reused)", fmt.Sprintf("host=%s pid=%d start=1%s\n", host, os.Getpid(), myStart), time.Now(), false},
		{"a dead process of this host, its start time", fmt.Sprintf("host=%s pid=%d start=%s\n", host, dead, myStart), time.Now(), false},
		{"this process, as TakeLease names it", self().String() + "\n", time.Now(), true},
		{"a dead process of this host, boot and namespace", fmt.Sprintf("x\n%s\n", holder{host: host, pid: dead, boot: self().boot, pidns: self().pidns}), time.Now(), false},
		{"a process of another process-id namespace (a container)", fmt.Sprintf("host=%s pid=%d pidns=pid:[1]\n", host, dead), time.Now(), true},
		{"a process of another boot or machine of the same name", fmt.Sprintf("host=%s pid=%d boot=00000000-0000\n", host, dead), time.Now(), true},
		{"another namespace, not renewed", fmt.Sprintf("host=%s pid=%d pidns=pid:[1]\n", host, dead), stale, false},
		{"this process, not renewed", fmt.Sprintf("host=%s pid=%d\n", host, os.Getpid()), stale, false},
		{"a dead process of this host", fmt.Sprintf("host=%s pid=%d\n", host, dead), time.Now(), false},
		{"another host", fmt.Sprintf("x\nhost=%s-elsewhere pid=%d\n", host, dead), time.Now(), true},
		{"another host, not renewed", fmt.Sprintf("host=%s-elsewhere pid=1\n", host), stale, false},
		{"unreadable holder", "garbage", time.Now(), true},
		{"unreadable holder, not renewed", "garbage", stale, false},
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, dry := range []bool{true, false} {
		for _, l := range leases {
			t.Run(fmt.Sprintf("%s/dry=%v", l.name, dry), func(t *testing.T) {
				c, root := lakeCatalog(t)
				dir := filepath.Join(root, "table-1", "optimize-1")
				held, err := MakeRewriteDir(dir, root)
				if err != nil {
					t.Fatal(err)
				}
				held.Release()
				leaseFile := filepath.Join(dir, LeaseFile)
				if l.body != "" {
					if err := os.WriteFile(leaseFile, []byte(l.body), 0o644); err != nil {
						t.Fatal(err)
					}
					os.Chtimes(leaseFile, l.touched, l.touched)
				}
				oldFile, newFile := filepath.Join(dir, "part-00000.parquet"), filepath.Join(dir, "part-00001.parquet")
				// What a writer killed while writing its lease leaves.
				oldTmp := filepath.Join(dir, fmt.Sprintf("%s.%d.tmp", LeaseFile, dead))
				for _, p := range []string{oldFile, newFile, oldTmp} {
					if err := os.WriteFile(p, []byte("PAR1"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				os.Chtimes(oldFile, old, old)
				os.Chtimes(oldTmp, old, old)
				res, err := c.DeleteOrphans(OrphanOptions{DryRun: dry})
				if err != nil {
					t.Fatal(err)
				}
				takesOld := !l.live
				if got := slices.Contains(res.Deleted, oldTmp); got != takesOld {
					t.Fatalf("a killed writer's lease being written reported deleted %v, want %v: %+v", got, takesOld, res)
				}
				if got := slices.Contains(res.Deleted, oldFile); got != takesOld {
					t.Fatalf("old file reported deleted %v, want %v: %+v", got, takesOld, res)
				}
				if slices.Contains(res.Deleted, newFile) {
					t.Fatalf("a file within the grace period was deleted: %+v", res)
				}
				if got := slices.Contains(res.InUse, dir); got != l.live {
					t.Fatalf("in use %v, want %v: %+v", got, l.live, res)
				}
				expired := l.body != "" && !l.live
				if got := slices.Contains(res.Expired, leaseFile); got != expired {
					t.Fatalf("lease reported expired %v, want %v: %+v", got, expired, res)
				}
				_, statOld := os.Stat(oldFile)
				_, statLease := os.Stat(leaseFile)
				if gone := errors.Is(statOld, fs.ErrNotExist); gone != (takesOld && !dry) {
					t.Fatalf("old file gone %v (dry run %v, taken %v)", gone, dry, takesOld)
				}
				if l.body != "" {
					if gone := errors.Is(statLease, fs.ErrNotExist); gone != (expired && !dry) {
						t.Fatalf("lease gone %v (dry run %v, expired %v)", gone, dry, expired)
					}
				}
			})
		}
	}
}

// A lease is renewed while held, and Release removes it; a released
// directory's old files are orphans again.
func TestLeaseRenewedUntilReleased(t *testing.T) {
	defer func(r time.Duration) { LeaseRefresh = r }(LeaseRefresh)
	LeaseRefresh = 10 * time.Millisecond
	c, root := lakeCatalog(t)
	dir := filepath.Join(root, "table-1", "optimize-1")
	l, err := MakeRewriteDir(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	leaseFile := filepath.Join(dir, LeaseFile)
	stale := time.Now().Add(-LeaseExpiry - time.Minute)
	os.Chtimes(leaseFile, stale, stale)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(leaseFile)
		if err != nil {
			t.Fatal(err)
		}
		if st.ModTime().After(stale.Add(time.Minute)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a held lease was not renewed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	part := filepath.Join(dir, "part-00000.parquet")
	os.WriteFile(part, []byte("PAR1"), 0o644)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(part, old, old)
	if res, err := c.DeleteOrphans(OrphanOptions{}); err != nil || len(res.Deleted) != 0 || !slices.Contains(res.InUse, dir) {
		t.Fatalf("a held lease's directory: %+v %v", res, err)
	}
	l.Release()
	l.Release()
	if _, err := os.Stat(leaseFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("released lease still there: %v", err)
	}
	res, err := c.DeleteOrphans(OrphanOptions{})
	if err != nil || !slices.Equal(res.Deleted, []string{part}) || !slices.Contains(res.Dirs, dir) {
		t.Fatalf("after release: %+v %v", res, err)
	}
}

// A commit holding a lease that orphan cleanup took fails with
// ErrLeaseLost and writes nothing: whether cleanup came before the
// commit, or between the commit's check of its lease and its write (the
// cleanup of another process, here another catalog over the same store,
// moves the fence so that the commit reads again).
func TestCommitFailsWhenItsLeaseWasTaken(t *testing.T) {
	for _, when := range []string{"before", "during", "name taken again"} {
		t.Run(when, func(t *testing.T) {
			store := kvtest.Store(t)
			data := t.TempDir()
			c, err := CreateInStore(store, Options{DataRoot: data})
			if err != nil {
				t.Fatal(err)
			}
			other, err := OpenStore(store, Options{})
			if err != nil {
				t.Fatal(err)
			}
			commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
			root := c.RewriteRoot()
			dir := filepath.Join(root, "table-1", "optimize-1")
			l, err := MakeRewriteDir(dir, root)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			part := filepath.Join(dir, "part-00000.parquet")
			os.WriteFile(part, []byte("PAR1"), 0o644)
			// The writer stalled: its lease is past its expiry.
			stale := time.Now().Add(-LeaseExpiry - time.Minute)
			os.Chtimes(l.path, stale, stale)
			cleanup := func() {
				res, err := other.DeleteOrphans(OrphanOptions{Grace: -1})
				if err != nil || !slices.Equal(res.Deleted, []string{part}) {
					t.Errorf("cleanup: %+v %v", res, err)
				}
			}
			switch when {
			case "before":
				cleanup()
			case "name taken again":
				// Another write that read the same snapshot makes the
				// directory of the same name, with a lease of its own.
				cleanup()
				os.RemoveAll(dir)
				l2, err := MakeRewriteDir(dir, root)
				if err != nil {
					t.Fatal(err)
				}
				defer l2.Release()
			default:
				leasesChecked = func() { leasesChecked = nil; cleanup() }
				defer func() { leasesChecked = nil }()
			}
			before := dump(t, c)
			tx, err := c.Begin()
			if err != nil {
				t.Fatal(err)
			}
			tx.AddFiles("t", intFile(t, part, 1, 10, 0))
			tx.Hold(l)
			if _, err := tx.Commit(); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("commit of files cleanup deleted: %v", err)
			}
			if when != "during" && dump(t, c) != before {
				t.Fatal("a failed commit changed the catalog")
			}
			r, err := c.Read(Latest)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tb, _ := r.Table("t")
			if files, err := r.Files(tb.ID); err != nil || len(files) != 0 {
				t.Fatalf("files registered: %v %v", files, err)
			}
		})
	}
}

// Writes that read the same snapshot name their directories alike, and a
// write that commits nothing removes its directory and lets its lease go,
// in either order: another write may make the directory of that name in
// between, and so also see its table's directory removed while it makes
// one in it. Neither write's lease is then the other's to delete, and
// making the directory does not fail.
func TestRewriteDirNamesReusedAcrossWriters(t *testing.T) {
	_, root := lakeCatalog(t)
	const writers, rounds = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				var l *Lease
				var dir string
				var err error
				for range 100 {
					dir = DefaultRewriteDir(root, 1, 58, "update")
					if l, err = MakeRewriteDir(dir, root); !errors.Is(err, fs.ErrExist) {
						break
					}
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d round %d: making %s: %w", w, i, dir, err)
					return
				}
				// The write's work, and the time a write takes between
				// removing its directory and releasing: where the other
				// writes come in.
				pause := func() { time.Sleep(time.Duration(i%3) * 200 * time.Microsecond) }
				pause()
				if err := l.Check(); err != nil {
					errs <- fmt.Errorf("writer %d round %d: a lease nobody took: %w", w, i, err)
					l.Release()
					return
				}
				if i%2 == 0 {
					l.Release()
					os.RemoveAll(dir)
				} else {
					os.RemoveAll(dir)
					pause()
					l.Release()
				}
				os.Remove(filepath.Dir(dir))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A lease released after its directory was removed and made again by
// another write leaves the other write's lease, which still holds.
func TestReleaseLeavesAnotherWritersLease(t *testing.T) {
	_, root := lakeCatalog(t)
	dir := filepath.Join(root, "table-1", "update-58")
	first, err := MakeRewriteDir(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir)
	second, err := MakeRewriteDir(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Check(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a lease whose directory was made again by another write: %v", err)
	}
	first.Release()
	if err := second.Check(); err != nil {
		t.Fatalf("the other write's lease after the first was released: %v", err)
	}
	second.Release()
	if _, err := os.Stat(filepath.Join(dir, LeaseFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("released lease still there: %v", err)
	}
}
