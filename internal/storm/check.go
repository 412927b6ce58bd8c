package storm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
)

// Report is what a storm did and what Check found.
type Report struct {
	Writers, Readers int
	// Elapsed runs from the first writer's start to the last line any
	// writer logged.
	Elapsed time.Duration

	// Outcomes of Commit, one per commit attempted.
	Acknowledged int // returned a snapshot
	Refused      int // ErrConflict: nothing written, by design
	Failed       int // an error saying nothing was written
	Unknown      int // an error wrapping kv.ErrUnknownOutcome
	Died         int // the writer died in Commit (pending, no outcome)
	// UnknownLanded counts the Unknown and Died commits found in the
	// catalog (each whole and once).
	UnknownLanded int
	// Retries counts conditional writes the fence refused inside Commit
	// (another process wrote first; Commit built the commit again);
	// StoreUnknown the write attempts whose outcome the store could not
	// report, which Commit resolved by its commit token.
	Retries      int
	StoreUnknown int
	// BeginErrors counts failed Begin calls (and failed opens).
	BeginErrors int

	// ReadsChecked counts snapshots the readers checked whole;
	// ReadErrors reads the store failed.
	ReadsChecked int64
	ReadErrors   int

	// Latency of acknowledged commits (the Commit call).
	CommitP50, CommitP99, CommitMax time.Duration
	CommitsPerSec                   float64
	// Latency splits the acknowledged commits' latency by the writers'
	// group (the shared table, tables of their own), then by how many
	// times each commit lost the fence before it landed: where the tail
	// comes from. A commit that conflicts with nothing still loses the
	// fence to every commit that lands while it reads, and builds itself
	// again each time.
	Latency []LatencyGroup

	Head  int64 // the newest snapshot
	Files int   // live files at the head

	// ByWriter has each writer's own counts, by writer id.
	ByWriter map[int]*WriterCounts
	// Errors lists failed calls in the order of their logs, the first
	// maxErrors of ErrorCount. LongestCall is the slowest Begin or
	// Commit, failed or not: how long a writer waited at most.
	Errors      []CallError
	ErrorCount  int
	LongestCall time.Duration

	// Violations lists every inconsistency found: in the catalog, between
	// it and the writers' logs, and those the readers logged.
	Violations []string
}

// LatencyGroup is the latency of a group of acknowledged commits.
type LatencyGroup struct {
	Group         string
	Commits       int
	P50, P99, Max time.Duration
}

// latencyOf is the percentiles of lat, which it sorts.
func latencyOf(group string, lat []time.Duration) LatencyGroup {
	slices.Sort(lat)
	n := len(lat)
	g := LatencyGroup{Group: group, Commits: n}
	if n > 0 {
		g.P50, g.P99, g.Max = lat[(n-1)*50/100], lat[(n-1)*99/100], lat[n-1]
	}
	return g
}

func (g LatencyGroup) String() string {
	return fmt.Sprintf("%s: %d, p50 %s p99 %s max %s", g.Group, g.Commits,
		g.P50.Round(time.Millisecond), g.P99.Round(time.Millisecond), g.Max.Round(time.Millisecond))
}

// WriterCounts are one writer's outcomes.
type WriterCounts struct {
	Table                                        string
	Acknowledged, Refused, Failed, Unknown, Died int
	FirstAck, LastAck                            time.Time
	// LastRefused is when the writer's last commit was refused with a
	// conflict: decided, as an acknowledgement is.
	LastRefused time.Time
}

// CallError is a call a worker saw fail.
type CallError struct {
	Worker string // "writer 3", "reader 0"
	Op     string // open, begin, commit, read
	Time   time.Time
	Took   time.Duration
	// Unavailable: the error wraps kv.ErrUnavailable. Unknown: it wraps
	// kv.ErrUnknownOutcome (the commit may have landed).
	Unavailable, Unknown bool
	Err                  string
}

const maxErrors = 10000

func (r *Report) callError(e CallError) {
	r.ErrorCount++
	if len(r.Errors) < maxErrors {
		r.Errors = append(r.Errors, e)
	}
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d writers, %d readers, %s: %d commits acknowledged (%.1f/s), %d refused (conflict), %d failed, %d unknown (%d died in Commit), %d of those landed\n",
		r.Writers, r.Readers, r.Elapsed.Round(time.Millisecond), r.Acknowledged, r.CommitsPerSec, r.Refused, r.Failed, r.Unknown+r.Died, r.Died, r.UnknownLanded)
	fmt.Fprintf(&b, "fence retries %d, unknown store outcomes resolved %d, failed begins/opens %d; commit latency p50 %s, p99 %s, max %s\n",
		r.Retries, r.StoreUnknown, r.BeginErrors, r.CommitP50.Round(time.Microsecond), r.CommitP99.Round(time.Microsecond), r.CommitMax.Round(time.Microsecond))
	if len(r.Latency) > 0 {
		b.WriteString("commit latency by group:")
		for _, g := range r.Latency {
			b.WriteString(" " + g.String() + ";")
		}
		b.WriteString("\n")
	}
	if len(r.ByWriter) > 0 {
		b.WriteString("commits acknowledged (refused) by writer:")
		for _, id := range slices.Sorted(maps.Keys(r.ByWriter)) {
			w := r.ByWriter[id]
			fmt.Fprintf(&b, " %d %s %d (%d);", id, w.Table, w.Acknowledged, w.Refused)
		}
		shared, solo := r.Spreads()
		fmt.Fprintf(&b, "\nshared table: %s; tables of their own: %s\n", shared, solo)
	}
	fmt.Fprintf(&b, "%d snapshots checked by readers (%d failed reads); head %d with %d files; %d violations", r.ReadsChecked, r.ReadErrors, r.Head, r.Files, len(r.Violations))
	for i, v := range r.Violations {
		if i == 30 {
			fmt.Fprintf(&b, "\n  … %d more", len(r.Violations)-i)
			break
		}
		b.WriteString("\n  " + v)
	}
	return b.String()
}

// commitRec is one commit a writer attempted, from its log.
type commitRec struct {
	writer  int
	seq     int64
	table   string
	files   int
	outcome string // an ev* outcome, or evPending when the writer died
	snap    int64
	ns      int64
}

func (c *commitRec) String() string {
	return fmt.Sprintf("commit %d/%d (%s, %s)", c.writer, c.seq, c.table, c.outcome)
}

// Check reads the storm's logs in cfg.Dir and its catalog, and reports.
// It fails when it finds a violation (listed in the report) or cannot
// read what it checks.
func Check(cfg Config) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, err
	}
	var rep Report
	bad := func(format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, args...))
	}

	writerLogs, readerLogs, err := logs(cfg.Dir)
	if err != nil {
		return rep, err
	}
	rep.Writers, rep.Readers = len(writerLogs), len(readerLogs)
	rep.ByWriter = map[int]*WriterCounts{}
	commits := map[commitKey]*commitRec{}
	var first, last int64
	var latencies []time.Duration
	byGroup := map[bool][]time.Duration{} // by shared
	byLost := map[int][]time.Duration{}   // by fence retries
	for _, path := range writerLogs {
		entries, err := readLog(path)
		if err != nil {
			return rep, err
		}
		if len(entries) == 0 {
			continue // killed before its first line: it did nothing
		}
		if entries[0].Ev != evStart {
			bad("%s does not begin with its start", path)
			continue
		}
		var id int
		if _, err := fmt.Sscanf(path[strings.LastIndex(path, "writer-"):], "writer-%d.jsonl", &id); err != nil {
			return rep, fmt.Errorf("%s: %v", path, err)
		}
		table, k := entries[0].Table, entries[0].Files
		wc := &WriterCounts{Table: table}
		rep.ByWriter[id] = wc
		who := fmt.Sprintf("writer %d", id)
		if first == 0 || entries[0].T < first {
			first = entries[0].T
		}
		last = max(last, entries[len(entries)-1].T)
		var pending *commitRec
		for _, e := range entries[1:] {
			rep.LongestCall = max(rep.LongestCall, time.Duration(e.Ns))
			switch e.Ev {
			case evOpenError, evBeginErr:
				rep.BeginErrors++
				rep.callError(CallError{Worker: who, Op: map[string]string{evOpenError: "open", evBeginErr: "begin"}[e.Ev],
					Time: time.Unix(0, e.T), Took: time.Duration(e.Ns), Unavailable: e.Unavailable, Err: e.Err})
			case evFatal:
				bad("writer %d gave up: %s", id, e.Err)
			case evPending:
				if pending != nil {
					bad("writer %d: commit %d pending while %d has no outcome", id, e.Seq, pending.seq)
				}
				pending = &commitRec{writer: id, seq: e.Seq, table: table, files: k, outcome: evPending}
				commits[commitKey{id, e.Seq}] = pending
			case evAck, evRefused, evFailed, evUnknown:
				if pending == nil || pending.seq != e.Seq {
					bad("writer %d: outcome %s of commit %d, which is not pending", id, e.Ev, e.Seq)
					continue
				}
				pending.outcome, pending.snap, pending.ns = e.Ev, e.Snap, e.Ns
				pending = nil
				rep.Retries += e.Retries
				rep.StoreUnknown += e.StoreUnknown
				switch e.Ev {
				case evAck:
					rep.Acknowledged++
					wc.Acknowledged++
					latencies = append(latencies, time.Duration(e.Ns))
					byGroup[table == SharedTable] = append(byGroup[table == SharedTable], time.Duration(e.Ns))
					byLost[e.Retries] = append(byLost[e.Retries], time.Duration(e.Ns))
					if wc.FirstAck.IsZero() {
						wc.FirstAck = time.Unix(0, e.T)
					}
					wc.LastAck = time.Unix(0, e.T)
				case evRefused:
					rep.Refused++
					wc.Refused++
					wc.LastRefused = time.Unix(0, e.T)
				case evFailed, evUnknown:
					if e.Ev == evFailed {
						rep.Failed++
						wc.Failed++
					} else {
						rep.Unknown++
						wc.Unknown++
					}
					rep.callError(CallError{Worker: who, Op: "commit", Time: time.Unix(0, e.T), Took: time.Duration(e.Ns),
						Unavailable: e.Unavailable, Unknown: e.Ev == evUnknown, Err: e.Err})
				}
			}
		}
		if pending != nil {
			rep.Died++
			wc.Died++
		}
	}
	if first > 0 {
		rep.Elapsed = time.Duration(last - first)
	}
	for _, shared := range []bool{true, false} {
		if lat := byGroup[shared]; len(lat) > 0 {
			rep.Latency = append(rep.Latency, latencyOf(map[bool]string{true: "shared table", false: "own tables"}[shared], lat))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byLost)) {
		rep.Latency = append(rep.Latency, latencyOf(fmt.Sprintf("fence lost %d %s", k, map[bool]string{true: "time", false: "times"}[k == 1]), byLost[k]))
	}
	if n := len(latencies); n > 0 {
		slices.Sort(latencies)
		rep.CommitP50, rep.CommitP99, rep.CommitMax = latencies[(n-1)*50/100], latencies[(n-1)*99/100], latencies[n-1]
		if rep.Elapsed > 0 {
			rep.CommitsPerSec = float64(rep.Acknowledged) / rep.Elapsed.Seconds()
		}
	}
	// A table one writer alone commits to cannot conflict: every commit
	// since its Begin touched other tables.
	writersOf := map[string]map[int]bool{}
	for _, cr := range commits {
		if writersOf[cr.table] == nil {
			writersOf[cr.table] = map[int]bool{}
		}
		writersOf[cr.table][cr.writer] = true
	}
	for _, cr := range sortedCommits(commits) {
		if cr.outcome == evRefused && len(writersOf[cr.table]) == 1 {
			bad("%s: refused with a conflict on a table no other writer touches", cr)
		}
	}

	for _, path := range readerLogs {
		entries, err := readLog(path)
		if err != nil {
			return rep, err
		}
		var reads int64
		for _, e := range entries {
			switch e.Ev {
			case evReads:
				reads = e.Reads
			case evReadErr, evOpenError:
				rep.ReadErrors++
				rep.callError(CallError{Worker: strings.ReplaceAll(strings.TrimSuffix(path[strings.LastIndex(path, "reader-"):], ".jsonl"), "-", " "),
					Op: "read", Time: time.Unix(0, e.T), Unavailable: e.Unavailable, Err: e.Err})
			case evViolation:
				bad("%s, snapshot %d: %s", strings.TrimSuffix(path[strings.LastIndex(path, "reader-"):], ".jsonl"), e.Snap, e.Err)
			case evFatal:
				bad("%s gave up: %s", path, e.Err)
			}
		}
		rep.ReadsChecked += reads
	}

	if err := checkCatalog(cfg, commits, &rep, bad); err != nil {
		return rep, err
	}
	if len(rep.Violations) > 0 {
		return rep, fmt.Errorf("storm: %d violations:\n%s", len(rep.Violations), strings.Join(rep.Violations[:min(len(rep.Violations), 30)], "\n"))
	}
	return rep, nil
}

func sortedCommits(m map[commitKey]*commitRec) []*commitRec {
	out := make([]*commitRec, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].writer != out[j].writer {
			return out[i].writer < out[j].writer
		}
		return out[i].seq < out[j].seq
	})
	return out
}

// found is a live file at the head.
type found struct {
	table string
	f     catalog.DataFile
}

// checkCatalog compares the catalog's head with the writers' commits.
func checkCatalog(cfg Config, commits map[commitKey]*commitRec, rep *Report, bad func(string, ...any)) error {
	c, err := catalog.Open(cfg.Catalog, catalog.Options{Postgres: cfg.Postgres})
	if err != nil {
		return err
	}
	defer c.Close()
	snaps, err := c.Snapshots()
	if err != nil {
		return err
	}
	if v := denseViolation(snaps); v != "" {
		bad("Snapshots: %s", v)
	}
	if len(snaps) == 0 {
		return nil
	}
	head := snaps[len(snaps)-1]
	rep.Head = head.ID
	bySnap := map[int64]catalog.Snapshot{}
	for _, s := range snaps {
		bySnap[s.ID] = s
	}
	r, err := c.Read(head.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	tables, err := r.Tables()
	if err != nil {
		return err
	}
	tableIDs := map[string]int64{}
	byPath := map[string][]found{}
	byCommit := map[commitKey][]found{}
	perTable := map[string]int{}
	for _, t := range tables {
		tableIDs[t.Name] = t.ID
		files, err := r.Files(t.ID)
		if err != nil {
			return err
		}
		perTable[t.Name] = len(files)
		rep.Files += len(files)
		for _, f := range files {
			fd := found{t.Name, f}
			byPath[f.Path] = append(byPath[f.Path], fd)
			w, seq, _, ok := parsePath(f.Path)
			if !ok {
				bad("table %s: file %s was made by no storm writer", t.Name, f.Path)
				continue
			}
			byCommit[commitKey{w, seq}] = append(byCommit[commitKey{w, seq}], fd)
		}
	}
	for p, fs := range byPath {
		if len(fs) > 1 {
			bad("file %s is registered %d times (tables %s and %s, files %d and %d)", p, len(fs), fs[0].table, fs[1].table, fs[0].f.ID, fs[1].f.ID)
		}
	}
	for ck, fs := range byCommit {
		if commits[ck] == nil {
			bad("files of commit %d/%d (first %s, snapshot %d) are in table %s, but no writer logged that commit", ck.writer, ck.seq, fs[0].f.Path, fs[0].f.Begin, fs[0].table)
		}
	}
	claimed := map[int64]*commitRec{}
	presentCommits := map[string]int{}
	var acked []*commitRec
	for _, cr := range sortedCommits(commits) {
		fs := byCommit[commitKey{cr.writer, cr.seq}]
		whole := len(fs) == cr.files
		seen := map[string]bool{}
		var begin int64 = -1
		for _, fd := range fs {
			if fd.table != cr.table {
				bad("%s: file %s is in table %s", cr, fd.f.Path, fd.table)
				whole = false
			}
			if seen[fd.f.Path] {
				whole = false
			}
			seen[fd.f.Path] = true
			if begin >= 0 && fd.f.Begin != begin {
				bad("%s: its files came in snapshots %d and %d", cr, begin, fd.f.Begin)
			}
			begin = fd.f.Begin
		}
		switch cr.outcome {
		case evAck:
			if !whole {
				bad("%s: acknowledged as snapshot %d, but %d of its %d files are at the head", cr, cr.snap, len(fs), cr.files)
			} else if begin != cr.snap {
				bad("%s: acknowledged as snapshot %d, but its files came in snapshot %d", cr, cr.snap, begin)
			}
			acked = append(acked, cr)
		case evRefused, evFailed:
			if len(fs) > 0 {
				bad("%s: %d of its %d files are at the head (snapshot %d), though Commit said nothing was written", cr, len(fs), cr.files, begin)
			}
		case evUnknown, evPending:
			switch {
			case len(fs) == 0:
				continue
			case !whole:
				bad("%s: outcome unknown, and %d of its %d files are at the head", cr, len(fs), cr.files)
			}
			rep.UnknownLanded++
			cr.snap = begin
		}
		if len(fs) == 0 {
			continue
		}
		presentCommits[cr.table]++
		if other := claimed[cr.snap]; other != nil {
			bad("snapshot %d holds both %s and %s", cr.snap, other, cr)
		}
		claimed[cr.snap] = cr
		if s, ok := bySnap[cr.snap]; !ok {
			bad("%s: snapshot %d is not listed", cr, cr.snap)
		} else if !slices.Contains(s.Changes.InsertedIntoTables, tableIDs[cr.table]) {
			bad("%s: snapshot %d does not record an insert into table %s", cr, cr.snap, cr.table)
		}
	}
	for name, n := range perTable {
		if want := presentCommits[name] * cfg.Files; n != want {
			bad("table %s: %d files at the head, want %d (%d commits of %d)", name, n, want, presentCommits[name], cfg.Files)
		}
	}
	for _, s := range snaps[1:] {
		ch := s.Changes
		if claimed[s.ID] == nil && (len(ch.InsertedIntoTables) > 0 || len(ch.CreatedTables) == 0) {
			bad("snapshot %d (changes %+v) is no storm commit and creates no table", s.ID, ch)
		}
	}
	return checkTimeTravel(c, acked, tableIDs, bad)
}

// checkTimeTravel reads a sample of acknowledged commits at their snapshot
// and the one before: all their files appear exactly there.
func checkTimeTravel(c *catalog.Catalog, acked []*commitRec, tableIDs map[string]int64, bad func(string, ...any)) error {
	const samples = 16
	for i := range min(samples, len(acked)) {
		cr := acked[i*len(acked)/min(samples, len(acked))]
		for _, at := range []int64{cr.snap - 1, cr.snap} {
			n, err := commitFilesAt(c, at, tableIDs[cr.table], cr)
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchSnapshot) {
					bad("%s: snapshot %d cannot be read: %v", cr, at, err)
					continue
				}
				return err
			}
			if want := map[bool]int{true: cr.files, false: 0}[at == cr.snap]; n != want {
				bad("%s: %d of its files are visible at snapshot %d, want %d", cr, n, at, want)
			}
		}
	}
	return nil
}

func commitFilesAt(c *catalog.Catalog, snap, tableID int64, cr *commitRec) (int, error) {
	r, err := c.Read(snap)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	files, err := r.Files(tableID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if w, seq, _, ok := parsePath(f.Path); ok && w == cr.writer && seq == cr.seq {
			n++
		}
	}
	return n, nil
}

// Spread is how evenly a group of writers committed: the fewest, median
// and most commits acknowledged to one writer of the group. A writer is
// starved when its count is under a third of the median (Starved lists
// them by id), the measure of fairness: a writer may be slower
// than its peers, not shut out by them.
type Spread struct {
	Writers          int
	Min, Median, Max int
	Starved          []int
}

// Spreads groups the writers as the storm does, those of the shared table
// and those with a table of their own, since writers of one table refuse
// each other by design and solo writers never conflict.
func (r Report) Spreads() (shared, solo Spread) {
	var sh, so []int
	for _, id := range slices.Sorted(maps.Keys(r.ByWriter)) {
		if r.ByWriter[id].Table == SharedTable {
			sh = append(sh, id)
		} else {
			so = append(so, id)
		}
	}
	return r.spread(sh), r.spread(so)
}

func (r Report) spread(ids []int) Spread {
	s := Spread{Writers: len(ids)}
	if len(ids) == 0 {
		return s
	}
	counts := make([]int, len(ids))
	for i, id := range ids {
		counts[i] = r.ByWriter[id].Acknowledged
	}
	sorted := slices.Sorted(slices.Values(counts))
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	// The lower median: with an even count, the smaller middle value, so
	// a starved writer is judged against what half the group reached.
	s.Median = sorted[(len(sorted)-1)/2]
	for i, c := range counts {
		if 3*c < s.Median {
			s.Starved = append(s.Starved, ids[i])
		}
	}
	return s
}

func (s Spread) String() string {
	if s.Writers == 0 {
		return "none"
	}
	starved := "none starved"
	if len(s.Starved) > 0 {
		starved = fmt.Sprintf("starved (under a third of the median): %v", s.Starved)
	}
	return fmt.Sprintf("%d writers, commits min %d / median %d / max %d, %s", s.Writers, s.Min, s.Median, s.Max, starved)
}
