package storm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
)

// progressEvery is how often a reader logs its count of checked reads.
const progressEvery = time.Second

type reader struct {
	s       spec
	c       *catalog.Catalog
	lg      *logFile
	maxHead int64 // the newest snapshot this reader has seen
	reads   int64
}

func runReader(s spec) error {
	lg, err := createLog(s.Log)
	if err != nil {
		return err
	}
	defer lg.close()
	if err := lg.put(entry{Ev: evStart, Files: s.Files, Pid: os.Getpid()}); err != nil {
		return err
	}
	c, _, err := open(s, lg)
	if err != nil {
		_ = lg.put(entry{Ev: evFatal, Err: err.Error()})
		return err
	}
	defer c.Close()
	rd := &reader{s: s, c: c, lg: lg, maxHead: -1}
	r := rand.New(rand.NewPCG(s.Seed, 1<<32+uint64(s.ID)))
	last := time.Now()
	for i := 0; time.Now().UnixNano() < s.Deadline; i++ {
		if err := rd.check(catalog.Latest); err != nil {
			return err
		}
		if rd.maxHead > 0 {
			if err := rd.check(r.Int64N(rd.maxHead + 1)); err != nil {
				return err
			}
		}
		if i%5 == 0 {
			if err := rd.checkSnapshots(); err != nil {
				return err
			}
		}
		if time.Since(last) >= progressEvery {
			last = time.Now()
			if err := lg.put(entry{Ev: evReads, Reads: rd.reads, Snap: rd.maxHead}); err != nil {
				return err
			}
		}
	}
	if err := lg.put(entry{Ev: evReads, Reads: rd.reads, Snap: rd.maxHead}); err != nil {
		return err
	}
	return lg.put(entry{Ev: evStop})
}

// failed logs a read that the store failed (not an inconsistency) and
// pauses; only a failure to log ends the reader.
func (rd *reader) failed(snap int64, err error) error {
	if e := rd.lg.put(entry{Ev: evReadErr, Snap: snap, Err: err.Error(), Unavailable: errors.Is(err, kv.ErrUnavailable)}); e != nil {
		return e
	}
	time.Sleep(errorPause)
	return nil
}

// check reads one snapshot (catalog.Latest: the newest) and logs every
// inconsistency in it.
func (rd *reader) check(id int64) error {
	r, err := rd.c.Read(id)
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchSnapshot) && id != catalog.Latest {
			// Nothing expires in a storm: a snapshot once seen stays.
			return rd.lg.put(entry{Ev: evViolation, Snap: id, Err: fmt.Sprintf("snapshot %d, at or below the head %d seen before, is gone: %v", id, rd.maxHead, err)})
		}
		return rd.failed(id, err)
	}
	defer r.Close()
	snap := r.Snapshot()
	if id == catalog.Latest {
		if snap.ID < rd.maxHead {
			if err := rd.lg.put(entry{Ev: evViolation, Snap: snap.ID, Err: fmt.Sprintf("the head went back from %d to %d", rd.maxHead, snap.ID)}); err != nil {
				return err
			}
		}
		rd.maxHead = max(rd.maxHead, snap.ID)
	} else if snap.ID != id {
		return rd.lg.put(entry{Ev: evViolation, Snap: id, Err: fmt.Sprintf("asked for snapshot %d, read %d", id, snap.ID)})
	}
	violations, err := checkReader(r, rd.s.Files)
	if err != nil {
		return rd.failed(snap.ID, err)
	}
	for _, v := range violations {
		if err := rd.lg.put(entry{Ev: evViolation, Snap: snap.ID, Err: v}); err != nil {
			return err
		}
	}
	rd.reads++
	return nil
}

// checkSnapshots checks that Snapshots lists ids 0..n with no gap, and
// reaches at least the newest snapshot read before it.
func (rd *reader) checkSnapshots() error {
	seen := rd.maxHead
	snaps, err := rd.c.Snapshots()
	if err != nil {
		return rd.failed(-1, err)
	}
	if v := denseViolation(snaps); v != "" {
		return rd.lg.put(entry{Ev: evViolation, Err: "Snapshots: " + v})
	}
	if last := snaps[len(snaps)-1].ID; last < seen {
		return rd.lg.put(entry{Ev: evViolation, Snap: last, Err: fmt.Sprintf("Snapshots ends at %d, below the head %d read before", last, seen)})
	}
	return nil
}

// denseViolation describes a list of snapshots whose ids are not exactly
// 0, 1, …, n ("" when they are).
func denseViolation(snaps []catalog.Snapshot) string {
	if len(snaps) == 0 {
		return "no snapshot"
	}
	for i, s := range snaps {
		if s.ID != int64(i) {
			return fmt.Sprintf("position %d holds snapshot %d (ids must be 0..%d with no gap)", i, s.ID, len(snaps)-1)
		}
	}
	return ""
}

type commitKey struct {
	writer int
	seq    int64
}

// checkReader checks every table at the reader's snapshot: commits whole,
// files as their paths say, the plan cache and the table stats equal to
// the files. It returns the inconsistencies; err is a failed read.
func checkReader(r *catalog.Reader, k int) (violations []string, err error) {
	snap := r.Snapshot().ID
	bad := func(format string, args ...any) {
		if len(violations) < 20 {
			violations = append(violations, fmt.Sprintf(format, args...))
		}
	}
	tables, err := r.Tables()
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		files, err := r.Files(t.ID)
		if err != nil {
			return nil, err
		}
		groups := map[commitKey]int{}
		begins := map[commitKey]int64{}
		var rows int64
		var lo, hi int64
		for i, f := range files {
			w, seq, j, ok := parsePath(f.Path)
			if !ok {
				bad("table %s: file %d has a path no storm writer makes: %q", t.Name, f.ID, f.Path)
				continue
			}
			ck := commitKey{w, seq}
			groups[ck]++
			if b, ok := begins[ck]; ok && b != f.Begin {
				bad("table %s: commit %d/%d has files from snapshots %d and %d", t.Name, w, seq, b, f.Begin)
			}
			begins[ck] = f.Begin
			if f.Begin > snap || f.End.Known && f.End.V <= snap {
				bad("table %s: file %s (snapshots %d..%v) is listed at snapshot %d", t.Name, f.Path, f.Begin, f.End, snap)
			}
			n, l, h := fileFacts(w, seq, j)
			if f.RecordCount != n {
				bad("table %s: file %s has %d records, its writer registered %d", t.Name, f.Path, f.RecordCount, n)
			}
			rows += f.RecordCount
			if i == 0 || l < lo {
				lo = l
			}
			if i == 0 || h > hi {
				hi = h
			}
		}
		for ck, n := range groups {
			if n != k {
				bad("table %s: commit %d/%d shows %d of its %d files (torn)", t.Name, ck.writer, ck.seq, n, k)
			}
		}
		ts, err := r.TableStats(t.ID)
		if err != nil {
			return nil, err
		}
		if ts.RecordCount != rows || ts.FileCount != int64(len(files)) {
			bad("table %s: table stats say %d records in %d files; the files hold %d in %d", t.Name, ts.RecordCount, ts.FileCount, rows, len(files))
		}
		col, err := r.Column(t.ID, "x")
		if err != nil {
			return nil, err
		}
		if cs := ts.Columns[col.ID]; len(files) > 0 && (cs == nil || !bytes.Equal(cs.Min.V, encInt(lo)) || !bytes.Equal(cs.Max.V, encInt(hi))) {
			bad("table %s: table stats of x are not [%d, %d], the bounds of its files: %+v", t.Name, lo, hi, cs)
		}
		fs, err := r.FileSet(t.ID)
		if err != nil {
			return nil, err
		}
		if fs.Len() != len(files) {
			bad("table %s: the cached file set has %d files, the rows %d", t.Name, fs.Len(), len(files))
			continue
		}
		cb, err := r.ColumnBounds(t.ID, col.ID)
		if err != nil {
			return nil, err
		}
		if cb.Len() != len(files) {
			bad("table %s: the cached bounds of x cover %d files, the rows %d", t.Name, cb.Len(), len(files))
			continue
		}
		for i, f := range files {
			g, err := r.FileAt(fs, i)
			if err != nil {
				return nil, err
			}
			if fs.IDs[i] != f.ID || g.Path != f.Path || fs.RecordCounts[i] != f.RecordCount {
				bad("table %s: cached file %d is %d %q (%d records), the row is %d %q (%d)", t.Name, i, fs.IDs[i], g.Path, fs.RecordCounts[i], f.ID, f.Path, f.RecordCount)
				break
			}
			w, seq, j, ok := parsePath(f.Path)
			if !ok {
				continue
			}
			n, l, h := fileFacts(w, seq, j)
			var st stats.Column
			if !cb.Fill(i, &st) || !bytes.Equal(st.Min.V, encInt(l)) || !bytes.Equal(st.Max.V, encInt(h)) || st.RowCount != n {
				bad("table %s: cached bounds of x in file %s are not [%d, %d] over %d rows: %+v", t.Name, f.Path, l, h, n, st)
				break
			}
		}
	}
	return violations, nil
}
