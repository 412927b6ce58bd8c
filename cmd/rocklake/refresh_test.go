package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
)

// catalogDigest is every key and value of a catalog directory's store,
// hashed: equal digests mean the catalog is byte for byte as it was.
func catalogDigest(t *testing.T, dir string) string {
	t.Helper()
	c, err := catalog.Open(dir, catalog.Options{Pebble: kv.PebbleOptions{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return kvtest.Digest(t, c.Store())
}

func ctimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, pqmeta.StampOf(st).Changed)
}

// untilCtimeMoves runs change, then does it again until the file's ctime
// differs from before: the kernel stamps ctime from a clock that ticks
// every few milliseconds, so a change right after registration may
// otherwise land on the very time registration read.
func untilCtimeMoves(t *testing.T, path string, before time.Time, change func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for change(); ctimeOf(t, path).Equal(before); change() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: ctime stays %s", path, before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rewriteInPlace gives path the bytes of src, keeping its size (the
// caller makes src the same size) and setting its modification time back:
// what a user's tool can do without root.
func rewriteInPlace(t *testing.T, path, src string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != st.Size() {
		t.Fatalf("%s is %d bytes, %s %d: the rewrite must keep the size", src, len(data), path, st.Size())
	}
	before := ctimeOf(t, path)
	untilCtimeMoves(t, path, before, func() {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	})
	if now, _ := os.Stat(path); now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
		t.Fatalf("%s: size and time not kept", path)
	}
}

// renameOver puts a copy of src's bytes at path by renaming a new file
// over it (another inode), with path's modification time.
func renameOver(t *testing.T, path, src string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// refusedNaming runs a query that must fail with ErrDataFileChanged,
// naming the file, what changed and the command that repairs it.
func (c *lakeCase) refusedNaming(q, path, what string) {
	c.t.Helper()
	out, err := run(c.t, "--catalog", c.cat, "query", q)
	if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) ||
		!strings.Contains(err.Error(), "rocklake refresh") {
		c.t.Fatalf("%s over %s, changed (%s): %v, want ErrDataFileChanged naming it, %q and rocklake refresh\n%s", q, path, what, err, what, out)
	}
}

// verifyNames runs plain verify, which must report path with what.
func (c *lakeCase) verifyNames(table, path, what string) {
	c.t.Helper()
	out, err := run(c.t, "--catalog", c.cat, "verify", table)
	var vf errVerifyFailed
	if !errors.As(err, &vf) {
		c.t.Fatalf("verify %s: %v, want problems found\n%s", table, err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "PROBLEM "+path+" ") && strings.Contains(l, what) {
			return
		}
	}
	c.t.Fatalf("verify %s does not name %s with %q:\n%s", table, path, what, out)
}

// refreshRefused runs a refresh that must be refused, naming path and
// why, and leave the catalog byte for byte as it was.
func (c *lakeCase) refreshRefused(why string, args ...string) {
	c.t.Helper()
	before := catalogDigest(c.t, c.cat)
	out, err := run(c.t, append([]string{"--catalog", c.cat, "refresh"}, args...)...)
	if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), args[1]) || !strings.Contains(err.Error(), why) ||
		!strings.Contains(err.Error(), "nothing was changed") {
		c.t.Fatalf("refresh %v: %v, want a refusal naming %s and %q\n%s", args, err, args[1], why, out)
	}
	if catalogDigest(c.t, c.cat) != before {
		c.t.Fatalf("refresh %v was refused but changed the catalog", args)
	}
}

// refreshed runs a refresh that must do outcome to every file named.
func (c *lakeCase) refreshed(outcome string, args ...string) {
	c.t.Helper()
	out := mustRun(c.t, append([]string{"--catalog", c.cat, "--format", "json", "refresh"}, args...)...)
	var rep struct {
		Snapshot *int64 `json:"snapshot_id"`
		Files    []struct {
			Path, Outcome string
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		c.t.Fatal(err)
	}
	if rep.Snapshot == nil || len(rep.Files) == 0 {
		c.t.Fatalf("refresh %v made no snapshot:\n%s", args, out)
	}
	for _, f := range rep.Files {
		if f.Outcome != outcome {
			c.t.Fatalf("refresh %v: %s %s, want %s\n%s", args, f.Path, f.Outcome, outcome, out)
		}
	}
}

// sameSize writes a file of gen(lo)'s rows, for the first lo from from
// on (in hundreds) that makes it the size of path: DuckDB's sizes follow
// the values, and many values give a file of the same size.
func (c *lakeCase) sameSize(name, path string, gen func(lo int) string, from int) string {
	c.t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		c.t.Fatal(err)
	}
	for lo := from; lo < from+50_000; lo += 100 {
		p := c.write(name, gen(lo))
		if st, _ := os.Stat(p); st.Size() == want.Size() {
			return p
		}
	}
	c.t.Fatalf("no rows from %d on give a file of %d bytes", from, want.Size())
	return ""
}

// Each way a registered file can change under its path without its size:
// every query that reads it fails naming it and `rocklake refresh`,
// verify names it with what changed, and refresh takes it back (a
// changed ctime or inode over the same footer), registers it again
// (--stats) or removes it (--remove); a refresh refused leaves the
// catalog byte for byte as it was, and afterwards queries agree with
// DuckDB reading the files directly.
func TestRefreshChangedFiles(t *testing.T) {
	c := newLakeCase(t)
	gen := func(lo int) string {
		return "SELECT i::BIGINT AS x, (i * 7 % 13)::BIGINT AS y FROM range(" + strconv.Itoa(lo) + ", " + strconv.Itoa(lo+100) + ") r(i)"
	}
	a := c.write("a.parquet", gen(1000))
	b := c.write("b.parquet", gen(1100))
	d := c.write("d.parquet", gen(1200))
	e := c.write("e.parquet", gen(1300))
	f := c.write("f.parquet", gen(1400))
	c.table("t", a, b, d, e, f)
	scan := "SELECT count(*), sum(x), min(x), max(x), sum(y) FROM t WHERE y >= 0"
	c.same(scan)

	t.Run("rewritten in place, same size and time", func(t *testing.T) {
		c.t = t
		// The case: the footer changes (its statistics do), the
		// size and modification time do not.
		src := c.sameSize("a-new.parquet", a, gen, 5000)
		rewriteInPlace(t, a, src)
		c.refusedNaming(scan, a, "ctime is")
		c.verifyNames("t", a, "its footer changed")
		c.refreshRefused("--stats registers it again", "t", a)
		c.refreshRefused("--stats registers it again", "t", a, "--deep")
		c.refreshed("registered again", "t", a, "--stats")
		c.same(scan)
		c.same("SELECT max(x) FROM t") // from statistics: the new ones
		c.same("SELECT count(*) FROM t WHERE x >= 5000")
		c.same("SELECT count(*) FROM t WHERE x BETWEEN 1000 AND 1099")
	})
	t.Run("chmod", func(t *testing.T) {
		c.t = t
		untilCtimeMoves(t, b, ctimeOf(t, b), func() {
			if err := os.Chmod(b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(b, 0o644); err != nil {
				t.Fatal(err)
			}
		})
		c.refusedNaming(scan, b, "ctime is")
		c.verifyNames("t", b, "ctime is")
		c.refreshed("accepted", "t", b, "--deep")
		c.same(scan)
		if out := mustRun(t, "--catalog", c.cat, "verify", "t", "--deep"); !strings.Contains(out, "0 problems") {
			t.Fatalf("verify after the refresh:\n%s", out)
		}
	})
	t.Run("restored under another inode", func(t *testing.T) {
		c.t = t
		// A restore from a backup: the same bytes and time, a new inode.
		backup := filepath.Join(c.dir, "d.backup")
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(backup, data, 0o644); err != nil {
			t.Fatal(err)
		}
		renameOver(t, d, backup)
		c.refusedNaming(scan, d, "another file has its path")
		c.verifyNames("t", d, "another file has its path")
		c.refreshed("accepted", "t", d)
		c.same(scan)
	})
	t.Run("replaced by another file of its size", func(t *testing.T) {
		c.t = t
		src := c.sameSize("e-new.parquet", e, gen, 1500)
		renameOver(t, e, src)
		c.refusedNaming(scan, e, "another file has its path")
		c.verifyNames("t", e, "its footer changed")
		c.refreshRefused("its content is not the content registered", "t", e)
		c.refreshed("removed", "t", e, "--remove")
		mustExec(t, c, "CREATE OR REPLACE VIEW t AS SELECT * FROM read_parquet(["+sqlString(a)+", "+sqlString(b)+", "+sqlString(d)+", "+sqlString(f)+"])")
		c.same(scan)
		c.same("SELECT max(x), min(x), count(*) FROM t")
	})
	t.Run("truncated", func(t *testing.T) {
		c.t = t
		if err := os.Truncate(f, 100); err != nil {
			t.Fatal(err)
		}
		c.refusedNaming(scan, f, "size is 100 bytes")
		c.verifyNames("t", f, "size is 100 bytes")
		c.refreshRefused("it cannot be registered again", "t", f)
		c.refreshRefused("it cannot be registered again", "t", f, "--stats")
		c.refreshed("removed", "t", f, "--remove")
		mustExec(t, c, "CREATE OR REPLACE VIEW t AS SELECT * FROM read_parquet(["+sqlString(a)+", "+sqlString(b)+", "+sqlString(d)+"])")
		c.same(scan)
	})
	c.t = t
	// Nothing is left to refresh.
	if out := mustRun(t, "--catalog", c.cat, "refresh", "t", "--all"); !strings.Contains(out, "nothing to refresh") {
		t.Fatalf("refresh --all of an unchanged table:\n%s", out)
	}
	if out := mustRun(t, "--catalog", c.cat, "verify", "t", "--deep"); !strings.Contains(out, "0 problems") {
		t.Fatalf("verify at the end:\n%s", out)
	}
}

func mustExec(t *testing.T, c *lakeCase, q string) {
	t.Helper()
	if _, err := c.oracle.Exec(q); err != nil {
		t.Fatal(err)
	}
}
