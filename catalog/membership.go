package catalog

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/membership"

	"google.golang.org/protobuf/proto"
)

// The membership index: a probe of `col = v` over N files reads a few bytes
// per file, not every file's filter.
//
// Each file's filter (row 10, a binary fuse filter of about 2.25 bytes per
// distinct value) stays the exact answer for one file. Beside it, a commit
// files each new file's signature (a blocked Bloom filter, package
// membership) into the column's slabs:
//
//	12 table column level first              MembershipSlab: file ids, blocks, groups
//	13 table column level first group(4)     MembershipGroup: the words of consecutive
//	                                         blocks, one per file of the slab
//
// first is the smallest file id of the slab, level its merge tier. A probe
// reads every slab header of the column (a range scan of row 12: ids only),
// then one group per slab — the one holding the value's block, 8 bytes per
// file at most — and asks each candidate's filter (row 10) to confirm, so
// the answer is exactly the filters' answer while the bytes read are O(N)
// words plus O(candidates) filters. Files no slab covers (registered before
// slabs existed) are asked through their filters as before.
//
// Slabs are an index over file ids, not versioned rows: a slab may name
// files a snapshot does not see (retired, expired, or added later), and a
// probe asks only about the files of its reader's FileSet. A reader sees the
// slabs of its store snapshot, and a commit rewrites slabs in the batch of
// its snapshot, so a probe never sees half a merge.
//
// Merging: a commit writes its new files' signatures as level-0 slabs (one
// per 1024 files of one signature length); then, per column and signature
// length, whenever slabFanIn slabs that are not full share a level, they
// are merged into slabs of the next level. A file is rewritten about
// log8(1024) ≈ 3 times on its way into a full slab, whatever the commits'
// sizes. Expired files stay in their slabs (a probe ignores them); expire
// deletes a slab once none of its files is left (expireSlabs), and the rest
// when the table is forgotten.

// slabFanIn is how many slabs of one level a merge takes.
const slabFanIn = 8

// fileSig is a new file's signature for one column.
type fileSig struct {
	id  int64
	sig []uint64
}

// slab is one slab a commit works on.
type slab struct {
	level, first int64
	ids          []int64
	blocks       int
	sigs         [][]uint64 // nil: stored and not read yet
	stored       bool       // its rows exist (a merge deletes them)
	groups       int        // stored groups
}

// writeSlabs files the commit's new signatures of ts into slabs and merges
// what the fan-in allows.
func (w *commitWriter) writeSlabs(ts *tableState) error {
	cols := make([]int64, 0, len(ts.sigs))
	for c := range ts.sigs {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	for _, col := range cols {
		if err := w.writeColumnSlabs(ts.t.ID, col, ts.sigs[col]); err != nil {
			return err
		}
	}
	return w.writeErr
}

func (w *commitWriter) writeColumnSlabs(table, col int64, added []fileSig) error {
	byBlocks := map[int][]fileSig{}
	for _, s := range added {
		byBlocks[len(s.sig)] = append(byBlocks[len(s.sig)], s)
	}
	// The slabs already stored that a merge may take: not full, of a length
	// this commit adds to.
	heads, err := readSlabHeads(w.r, table, col, func(p *catalogpb.MembershipSlab) bool {
		return byBlocks[int(p.Blocks)] != nil && len(p.FileIds) < membership.MaxSlabFiles && len(p.FileIds) > 0
	})
	if err != nil {
		return err
	}
	open := make([]*slab, len(heads))
	for i := range heads {
		open[i] = &heads[i]
	}
	lengths := make([]int, 0, len(byBlocks))
	for b := range byBlocks {
		lengths = append(lengths, b)
	}
	slices.Sort(lengths)
	for _, blocks := range lengths {
		var slabs []*slab
		for _, s := range open {
			if s.blocks == blocks {
				slabs = append(slabs, s)
			}
		}
		fresh := chunkSlabs(0, blocks, byBlocks[blocks])
		slabs = append(slabs, fresh...)
		// Merges only move files up, so one pass over the levels, lowest
		// first, settles every level.
		for level := int64(0); level <= maxLevel(slabs); level++ {
			var at, rest []*slab
			for _, s := range slabs {
				if s.level == level && len(s.ids) < membership.MaxSlabFiles {
					at = append(at, s)
				} else {
					rest = append(rest, s)
				}
			}
			if len(at) < slabFanIn {
				continue
			}
			merged, err := w.mergeSlabs(table, col, level+1, blocks, at)
			if err != nil {
				return err
			}
			slabs = append(rest, merged...)
		}
		for _, s := range slabs {
			if !s.stored {
				if err := w.putSlab(table, col, s); err != nil {
					return err
				}
			}
		}
	}
	return w.writeErr
}

// readSlabHeads reads the column's slab headers that keep accepts.
func readSlabHeads(r *Reader, table, col int64, keep func(*catalogpb.MembershipSlab) bool) ([]slab, error) {
	var out []slab
	err := scanPrefix(r, key(tagMemberSlab, table, col), func(k, v []byte) error {
		var p catalogpb.MembershipSlab
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("membership slab %x: %w", k, err)
		}
		if !keep(&p) {
			return nil
		}
		level, first, err := slabAt(k)
		if err != nil {
			return err
		}
		out = append(out, slab{level: level, first: first, ids: p.FileIds, blocks: int(p.Blocks), groups: int(p.Groups), stored: true})
		return nil
	})
	return out, err
}

func maxLevel(slabs []*slab) int64 {
	var m int64
	for _, s := range slabs {
		m = max(m, s.level)
	}
	return m
}

// chunkSlabs cuts files into slabs of at most MaxSlabFiles, in id order.
func chunkSlabs(level int64, blocks int, files []fileSig) []*slab {
	files = slices.Clone(files)
	sort.Slice(files, func(i, j int) bool { return files[i].id < files[j].id })
	var out []*slab
	for len(files) > 0 {
		n := min(len(files), membership.MaxSlabFiles)
		s := &slab{level: level, blocks: blocks, first: files[0].id}
		for _, f := range files[:n] {
			s.ids, s.sigs = append(s.ids, f.id), append(s.sigs, f.sig)
		}
		out = append(out, s)
		files = files[n:]
	}
	return out
}

// mergeSlabs reads the signatures of the stored slabs among from, deletes
// their rows, and returns the files of all of them as slabs of the level.
func (w *commitWriter) mergeSlabs(table, col, level int64, blocks int, from []*slab) ([]*slab, error) {
	var files []fileSig
	for _, s := range from {
		if s.sigs == nil {
			if err := readSlab(w.r, table, col, s); err != nil {
				return nil, err
			}
		}
		for i, id := range s.ids {
			files = append(files, fileSig{id, s.sigs[i]})
		}
		if s.stored {
			if err := w.batch.Delete(key(tagMemberSlab, table, col, s.level, s.first)); err != nil {
				return nil, err
			}
			for g := range s.groups {
				if err := w.batch.Delete(groupKey(table, col, s.level, s.first, g)); err != nil {
					return nil, err
				}
			}
		}
	}
	return chunkSlabs(level, blocks, files), nil
}

// readSlab reads a stored slab's signatures.
func readSlab(r *Reader, table, col int64, s *slab) error {
	groups := make([][]byte, 0, s.groups)
	err := scanPrefix(r, key(tagMemberGroup, table, col, s.level, s.first), func(k, v []byte) error {
		var p catalogpb.MembershipGroup
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("membership group %x: %w", k, err)
		}
		groups = append(groups, p.Words)
		return nil
	})
	if err != nil {
		return err
	}
	sigs, err := membership.DecodeGroups(len(s.ids), s.blocks, groups)
	if err != nil {
		return fmt.Errorf("membership slab of table %d column %d at file %d: %w", table, col, s.first, err)
	}
	s.sigs = sigs
	return nil
}

func (w *commitWriter) putSlab(table, col int64, s *slab) error {
	groups, err := membership.EncodeGroups(s.sigs)
	if err != nil {
		return err
	}
	w.put(key(tagMemberSlab, table, col, s.level, s.first), &catalogpb.MembershipSlab{
		Kind: membership.SigKind, Blocks: int32(s.blocks), Level: int32(s.level), FileIds: s.ids, Groups: int32(len(groups)),
	})
	for g, words := range groups {
		w.put(groupKey(table, col, s.level, s.first, g), &catalogpb.MembershipGroup{Words: words})
	}
	return w.writeErr
}

// MemberIndex answers "may file i hold v?" for one column over a FileSet,
// from the column's slabs and filters (see the top of this file). It is
// built per plan; Absent may be called from many goroutines.
type MemberIndex struct {
	r             *Reader
	table, column int64
	fs            *FileSet

	mu      sync.Mutex
	loaded  bool
	slabs   []slabView
	loose   []int // FileSet positions no slab covers
	absent  map[string][]bool
	reads   atomic.Int64
	bytes   atomic.Int64
	confirm atomic.Int64
}

// slabView is a slab as a probe reads it: its files' FileSet positions
// (-1: not a file of the snapshot).
type slabView struct {
	level, first int64
	blocks       int
	pos          []int
}

// MemberIndex returns the column's membership index over FileSet(tableID),
// or nil when no file of the table has a filter for the column.
func (r *Reader) MemberIndex(tableID, columnID int64) (*MemberIndex, error) {
	has, err := r.HasFilters(tableID, columnID)
	if err != nil || !has {
		return nil, err
	}
	fs, err := r.FileSet(tableID)
	if err != nil {
		return nil, err
	}
	return &MemberIndex{r: r, table: tableID, column: columnID, fs: fs, absent: map[string][]bool{}}, nil
}

// MemberStats is what a MemberIndex read: store reads, bytes, and filters
// read to confirm a signature's candidate.
type MemberStats struct{ Reads, Bytes, Confirmed int64 }

// Stats reports the index's reads so far.
func (m *MemberIndex) Stats() MemberStats {
	return MemberStats{Reads: m.reads.Load(), Bytes: m.bytes.Load(), Confirmed: m.confirm.Load()}
}

// Absent is true only when file i (a FileSet position) certainly does not
// hold the value (its encoding in the column's type). An error reading the
// index makes every file "may hold it": a damaged index costs reads, never
// rows.
func (m *MemberIndex) Absent(i int, enc []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.absent[string(enc)]
	if !ok {
		var err error
		if a, err = m.probe(enc); err != nil {
			a = nil
		}
		m.absent[string(enc)] = a
	}
	return a != nil && a[i]
}

// Prepare reads what every probe of the index reads first, the column's
// slab headers, into the catalog's cache (a later MemberIndex of the same
// state finds them there), so that a probe is left with its groups and
// filters to read.
func (m *MemberIndex) Prepare() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.load()
}

// memberViews is what load reads, cached per FileSet state.
type memberViews struct {
	slabs []slabView
	loose []int
}

// looseScan is the number of loose files beyond which their filters are
// read in one scan (and cached, as Filters does) rather than one by one.
const looseScan = 256

func (m *MemberIndex) load() error {
	if m.loaded {
		return nil
	}
	k := m.r.cacheKey(m.table, m.column)
	k.column = -(1 << 40) - m.column // the slab views' own key space
	if v, ok := m.r.c.plan.get(k).(*memberViews); ok {
		m.slabs, m.loose, m.loaded = v.slabs, v.loose, true
		return nil
	}
	covered := make([]bool, m.fs.Len())
	heads, err := readSlabHeads(m.r, m.table, m.column, func(p *catalogpb.MembershipSlab) bool {
		m.reads.Add(1)
		m.bytes.Add(int64(proto.Size(p)))
		// Unknown or damaged: its files count as loose.
		return p.Kind == membership.SigKind && int(p.Groups) == membership.Groups(len(p.FileIds), int(p.Blocks))
	})
	if err != nil {
		return err
	}
	for _, h := range heads {
		sv := slabView{level: h.level, first: h.first, blocks: h.blocks, pos: make([]int, len(h.ids))}
		seen := false
		for j, id := range h.ids {
			sv.pos[j] = -1
			if i, ok := slices.BinarySearch(m.fs.IDs, id); ok {
				sv.pos[j] = i
				covered[i] = true
				seen = true
			}
		}
		if seen {
			m.slabs = append(m.slabs, sv)
		}
	}
	for i, c := range covered {
		if !c {
			m.loose = append(m.loose, i)
		}
	}
	m.loaded = true
	size := int64(8*len(m.loose)) + 64
	for _, s := range m.slabs {
		size += int64(8*len(s.pos)) + 64
	}
	m.r.c.plan.put(k, &memberViews{m.slabs, m.loose}, size)
	return nil
}

// probe computes, for every file of the FileSet, whether the value is
// certainly absent.
func (m *MemberIndex) probe(enc []byte) ([]bool, error) {
	if err := m.load(); err != nil {
		return nil, err
	}
	h := membership.Hash(enc)
	absent := make([]bool, m.fs.Len())
	// Candidates to confirm with their filters: the files of a slab whose
	// word holds the value's bits, and the loose files.
	var candidates []int
	gkeys := make([][]byte, 0, len(m.slabs))
	probes := make([]membership.SlabProbe, 0, len(m.slabs))
	for _, s := range m.slabs {
		p := membership.ProbeSlab(h, len(s.pos), s.blocks)
		probes = append(probes, p)
		gkeys = append(gkeys, groupKey(m.table, m.column, s.level, s.first, p.Group))
	}
	groups, err := m.getMany(gkeys)
	if err != nil {
		return nil, err
	}
	for k, s := range m.slabs {
		var words []byte
		if raw := groups[k]; raw != nil {
			var g catalogpb.MembershipGroup
			if decodeValue(raw, &g) == nil {
				words = g.Words
			}
		}
		ok := words != nil && probes[k].Valid(words)
		for j, i := range s.pos {
			if i < 0 {
				continue
			}
			if ok && !probes[k].MayContain(words, j) {
				absent[i] = true
			} else {
				candidates = append(candidates, i)
			}
		}
	}
	if len(m.loose) > looseScan {
		fl, err := m.r.Filters(m.table, m.column)
		if err != nil {
			return nil, err
		}
		for _, i := range m.loose {
			if fl != nil && !fl.MayContain(i, enc) {
				absent[i] = true
			}
		}
	} else {
		candidates = append(candidates, m.loose...)
	}
	if len(candidates) == 0 {
		return absent, nil
	}
	fkeys := make([][]byte, len(candidates))
	for k, i := range candidates {
		fkeys[k] = key(tagFileFilter, m.table, m.column, m.fs.IDs[i])
	}
	fls, err := m.getMany(fkeys)
	if err != nil {
		return nil, err
	}
	m.confirm.Add(int64(len(candidates)))
	var p catalogpb.MembershipFilter
	for k, i := range candidates {
		if fls[k] == nil {
			continue // no filter: may hold anything
		}
		p.Reset()
		if decodeValue(fls[k], &p) != nil || p.Kind != membership.Kind {
			continue
		}
		if f, err := membership.Decode(p.Data); err == nil && !f.MayContain(enc) {
			absent[i] = true
		}
	}
	return absent, nil
}

// getMany reads keys (see getMany) and counts what it read.
func (m *MemberIndex) getMany(keys [][]byte) ([][]byte, error) {
	vals, err := getMany(m.r.kvs, keys)
	if err != nil {
		return nil, err
	}
	m.reads.Add(int64(len(keys)))
	for _, v := range vals {
		m.bytes.Add(int64(len(v)))
	}
	return vals, nil
}

// SignatureReader reads single files' signatures out of their slabs, for
// checks that compare them with the data (rocklake verify). It keeps the
// last slab it decoded: ask in file id order.
type SignatureReader struct {
	r             *Reader
	table, column int64
	heads         []slab // loaded on first use; sigs of one at a time
	loaded        bool
	cur           *slab
}

// Signatures returns a reader of the column's file signatures.
func (r *Reader) Signatures(tableID, columnID int64) *SignatureReader {
	return &SignatureReader{r: r, table: tableID, column: columnID}
}

// Of is file's signature, or false when no slab holds one for it.
func (s *SignatureReader) Of(fileID int64) ([]uint64, bool, error) {
	if !s.loaded {
		heads, err := readSlabHeads(s.r, s.table, s.column, func(p *catalogpb.MembershipSlab) bool { return p.Kind == membership.SigKind })
		if err != nil {
			return nil, false, err
		}
		s.heads = heads
		s.loaded = true
	}
	find := func(sl *slab) int {
		if sl == nil {
			return -1
		}
		if j, ok := slices.BinarySearch(sl.ids, fileID); ok {
			return j
		}
		return -1
	}
	if j := find(s.cur); j >= 0 {
		return s.cur.sigs[j], true, nil
	}
	for k := range s.heads {
		h := &s.heads[k]
		j := find(h)
		if j < 0 {
			continue
		}
		sl := *h
		if err := readSlab(s.r, s.table, s.column, &sl); err != nil {
			return nil, false, err
		}
		s.cur = &sl
		return sl.sigs[j], true, nil
	}
	return nil, false, nil
}

// slabAt reads a slab key's level and first file (table | column | level |
// first).
func slabAt(k []byte) (level, first int64, err error) {
	if level, err = idAt(k, 2); err != nil {
		return 0, 0, err
	}
	first, err = idAt(k, 3)
	return level, first, err
}
