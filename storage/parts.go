package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Range is bytes [Off, Off+Len) of an object.
type Range struct{ Off, Len int64 }

func (r Range) end() int64 { return r.Off + r.Len }

// The gap rule: two wanted ranges of one object closer than PartGap bytes
// are fetched in one request, the bytes between read and kept. A request
// costs a round trip (tens of milliseconds to a cloud store, where 64 KiB
// take about a millisecond to transfer), so a small gap is cheaper read
// than asked for separately; a larger gap would read pages the plan
// skipped. No request is larger than PartMaxRequest, so that a long run
// of wanted bytes is fetched by several connections at once.
const (
	PartGap        = 64 << 10
	PartMaxRequest = 8 << 20
)

// PartWorkers bounds the requests one PartReader has in flight: a query
// reading several objects in part runs several readers, and the store's
// connections (S3Options.Connections) bound them all.
const PartWorkers = 8

// partMinRead is the least an unplanned read fetches: a reader asking for
// bytes nobody announced (Prefetch) usually goes on reading after them, in
// pieces of its buffer's size.
const partMinRead = 16 << 10

// PartStats is what a PartReader did: requests made and bytes received
// (as Counts), bytes served from the cache's parts, and the requests made
// for bytes no Prefetch announced.
type PartStats struct {
	Requests, Bytes int64
	CachedBytes     int64
	Unplanned       int64
}

// PartReader reads parts of one object, as registered, for a reader that
// knows which byte ranges it needs: Prefetch fetches them (coalesced by
// the gap rule, PartWorkers at a time), ReadAt serves them from memory.
// Every fetched part is also kept in the cache (when there is one and the
// object has an ETag), keyed by the object's location, size and ETag, so a
// later query reads it from disk; a part is never served for another
// version of the object. A read of bytes not held is fetched on demand, so
// answers never depend on the prediction being right, only the request
// count does.
//
// Identity: opening reads the object's tail, by a request carrying the
// ETag (If-Match) or, when the cache holds it, after one HEAD that checks
// the ETag and size; every later request carries If-Match. A changed
// object fails with ErrChanged naming it, and its old parts stay apart
// from its new ones. Err reports the first error of the store, which an
// io.ReaderAt's caller (arrow-go) may otherwise wrap or lose.
type PartReader struct {
	ctx   context.Context
	store Store
	cache *Cache // nil: no parts kept
	obj   Object

	mu    sync.Mutex
	parts []heldPart // sorted by offset
	stats PartStats
	err   error
	pos   int64
}

type heldPart struct {
	off int64
	b   []byte
}

// OpenParts reads the last tail bytes of obj (all of it when smaller): the
// footer of a Parquet file, usually its page index too.
func OpenParts(ctx context.Context, st Store, cache *Cache, obj Object, tail int64) (*PartReader, error) {
	r := &PartReader{ctx: ctx, store: st, cache: cache, obj: obj}
	if obj.ETag == "" {
		// Without an ETag a part's bytes cannot be tied to one version.
		r.cache = nil
	}
	n := min(tail, obj.Size)
	want := Range{obj.Size - n, n}
	if r.cache != nil {
		if b, ok := r.cache.readPartCovering(obj, want); ok {
			now, err := st.Stat(ctx, obj.Location)
			r.stats.Requests++
			if err == nil && (now.Size != obj.Size || now.ETag != obj.ETag) {
				err = fmt.Errorf("%s: %w (now ETag %s, %d bytes; registered %s, %d bytes)", obj.Location, ErrChanged, now.ETag, now.Size, obj.ETag, obj.Size)
			}
			if err != nil {
				return nil, err
			}
			r.stats.CachedBytes += int64(len(b))
			r.add(want.Off, b)
			return r, nil
		}
	}
	b, err := r.fetch(want)
	if err != nil {
		return nil, err
	}
	r.add(want.Off, b)
	return r, nil
}

// Object is the object read.
func (r *PartReader) Object() Object { return r.obj }

// Size is the object's size.
func (r *PartReader) Size() int64 { return r.obj.Size }

// Stats is what the reader did so far.
func (r *PartReader) Stats() PartStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Err is the first error the store returned, if any.
func (r *PartReader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// fetch is one ranged request, its bytes put in the cache.
func (r *PartReader) fetch(rg Range) ([]byte, error) {
	b, err := r.store.ReadRange(r.ctx, r.obj, rg.Off, rg.Len)
	r.mu.Lock()
	r.stats.Requests++
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		return nil, err
	}
	r.stats.Bytes += int64(len(b))
	r.mu.Unlock()
	if r.cache != nil {
		// A part not kept costs a later fetch, not an answer.
		_ = r.cache.putPart(r.obj, rg, b)
	}
	return b, nil
}

// add holds b at off. Callers hold no lock.
func (r *PartReader) add(off int64, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.parts), func(i int) bool { return r.parts[i].off >= off })
	r.parts = append(r.parts, heldPart{})
	copy(r.parts[i+1:], r.parts[i:])
	r.parts[i] = heldPart{off, b}
}

// missing is what of rs no held part covers, sorted. Callers hold r.mu.
func (r *PartReader) missing(rs []Range) []Range {
	var out []Range
	for _, want := range rs {
		cur, end := want.Off, want.end()
		for cur < end {
			p, ok := r.covering(cur)
			if ok {
				cur = min(end, p.off+int64(len(p.b)))
				continue
			}
			// Up to the next held part's start.
			next := end
			for _, q := range r.parts {
				if q.off > cur && q.off < next {
					next = q.off
				}
			}
			out = append(out, Range{cur, next - cur})
			cur = next
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Off < out[j].Off })
	return out
}

// covering is a held part holding byte off. Callers hold r.mu.
func (r *PartReader) covering(off int64) (heldPart, bool) {
	for _, p := range r.parts {
		if p.off <= off && off < p.off+int64(len(p.b)) {
			return p, true
		}
	}
	return heldPart{}, false
}

// Coalesce sorts ranges and joins those less than gap bytes apart (the
// bytes between are read too), then splits any longer than maxLen.
func Coalesce(rs []Range, gap, maxLen int64) []Range {
	rs = append([]Range(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Off < rs[j].Off })
	var out []Range
	for _, x := range rs {
		if x.Len <= 0 {
			continue
		}
		if n := len(out); n > 0 && x.Off-out[n-1].end() < gap {
			out[n-1].Len = max(out[n-1].end(), x.end()) - out[n-1].Off
			continue
		}
		out = append(out, x)
	}
	var split []Range
	for _, x := range out {
		for x.Len > maxLen {
			split = append(split, Range{x.Off, maxLen})
			x = Range{x.Off + maxLen, x.Len - maxLen}
		}
		split = append(split, x)
	}
	return split
}

// Prefetch makes the reader hold every range of rs: what it does not hold
// is read from the cache's parts of this object where they cover it,
// the rest fetched (the gap rule, PartWorkers requests at a time).
func (r *PartReader) Prefetch(rs []Range) error {
	for i := range rs {
		// Clip to the object: a reader's read-ahead may run past a range's end.
		rs[i].Off = max(0, rs[i].Off)
		rs[i].Len = min(rs[i].end(), r.obj.Size) - rs[i].Off
	}
	r.mu.Lock()
	miss := r.missing(rs)
	r.mu.Unlock()
	if len(miss) == 0 {
		return nil
	}
	if r.cache != nil {
		for _, m := range miss {
			r.fromCache(m)
		}
		r.mu.Lock()
		miss = r.missing(miss)
		r.mu.Unlock()
	}
	reqs := Coalesce(miss, PartGap, PartMaxRequest)
	errs, _ := fan(len(reqs), PartWorkers, func(i int) error {
		b, err := r.fetch(reqs[i])
		if err == nil {
			r.add(reqs[i].Off, b)
		}
		return err
	})
	for _, err := range errs {
		if errors.Is(err, ErrUnreachable) {
			return err // one store's failure, not one per range
		}
	}
	return errors.Join(errs...)
}

func overlapsAny(p Range, rs []Range) bool {
	for _, x := range rs {
		if p.Off < x.end() && x.Off < p.end() {
			return true
		}
	}
	return false
}

// ReadAt serves held bytes; bytes not held are fetched (at least
// partMinRead of them, within the object) and counted as Unplanned.
func (r *PartReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", r.obj.Location, off)
	}
	if off >= r.obj.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.obj.Size-off)
	cur, end := off, off+n
	for cur < end {
		r.mu.Lock()
		hp, ok := r.covering(cur)
		r.mu.Unlock()
		if ok {
			k := copy(p[cur-off:n], hp.b[cur-hp.off:])
			cur += int64(k)
			continue
		}
		if r.cache != nil && r.fromCache(Range{cur, end - cur}) {
			continue
		}
		r.mu.Lock()
		miss := r.missing([]Range{{cur, end - cur}})[0]
		r.stats.Unplanned++
		r.mu.Unlock()
		if miss.Len < partMinRead {
			miss.Len = min(partMinRead, r.nextHeld(miss.Off)-miss.Off)
		}
		b, err := r.fetch(miss)
		if err != nil {
			return int(cur - off), err
		}
		r.add(miss.Off, b)
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// Holds reports whether [off, off+n) is held already: reading it costs no
// request (pqmeta then skips checking the leading magic, which would).
func (r *PartReader) Holds(off, n int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.missing([]Range{{off, n}})) == 0
}

// fromCache holds the cache's parts of the object that overlap want, and
// reports whether one of them holds want's first byte.
func (r *PartReader) fromCache(want Range) bool {
	first := false
	for _, p := range r.cache.parts(r.obj) {
		if !overlapsAny(p.Range, []Range{want}) {
			continue
		}
		if b, ok := r.cache.readPart(r.obj, p); ok {
			r.mu.Lock()
			r.stats.CachedBytes += int64(len(b))
			r.mu.Unlock()
			r.add(p.Off, b)
			first = first || (p.Off <= want.Off && want.Off < p.end())
		}
	}
	return first
}

// nextHeld is the start of the first held part after off (or the size).
func (r *PartReader) nextHeld(off int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.obj.Size
	for _, q := range r.parts {
		if q.off > off && q.off < next {
			next = q.off
		}
	}
	return next
}

// Seek sets the offset Seek reports; reads are all ReadAt (arrow-go seeks
// to learn the size).
func (r *PartReader) Seek(offset int64, whence int) (int64, error) {
	pos, err := seek(r.obj, r.pos, offset, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}

// partsDir holds the cache's parts of objects, a directory per object
// version: DIR/parts/<sha256(location)[:16]>-<sha256(etag)[:8]>-<size>/.
const partsDir = "parts"

func (c *Cache) partDir(obj Object) string {
	loc := sha256.Sum256([]byte(obj.Location))
	tag := sha256.Sum256([]byte(obj.ETag))
	return filepath.Join(c.Dir, partsDir, fmt.Sprintf("%s-%s-%d", hex.EncodeToString(loc[:16]), hex.EncodeToString(tag[:8]), obj.Size))
}

// cachedPart is a part the cache holds: its range and the CRC-32C of its
// bytes when they were written.
type cachedPart struct {
	Range
	sum uint32
}

// partName is a part's file name in its object's directory: the range it
// holds and the checksum of its bytes, which every read checks (a part
// damaged in place keeps its length).
func partName(p cachedPart) string { return fmt.Sprintf("%d-%d-%08x.part", p.Off, p.Len, p.sum) }

// parts lists the parts the cache holds of obj (as registered). Parts
// named without a checksum (written before parts had one) are not listed;
// eviction removes them in time.
func (c *Cache) parts(obj Object) []cachedPart {
	ents, err := os.ReadDir(c.partDir(obj))
	if err != nil {
		return nil
	}
	var out []cachedPart
	for _, e := range ents {
		f := strings.Split(strings.TrimSuffix(e.Name(), ".part"), "-")
		if len(f) != 3 || !strings.HasSuffix(e.Name(), ".part") {
			continue
		}
		off, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		sum, err3 := strconv.ParseUint(f[2], 16, 32)
		if err1 == nil && err2 == nil && err3 == nil && off >= 0 && n > 0 && off+n <= obj.Size {
			out = append(out, cachedPart{Range{off, n}, uint32(sum)})
		}
	}
	return out
}

// readPart reads one cached part whole, under the shared lock eviction
// respects, checks it against its checksum and marks it used. A part that
// fails the check is removed: its bytes are fetched again instead.
func (c *Cache) readPart(obj Object, p cachedPart) ([]byte, bool) {
	path := filepath.Join(c.partDir(obj), partName(p))
	f, ok := pinEntry(path, p.Len)
	if !ok {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, p.Len)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false
	}
	if checksum(b) != p.sum {
		os.Remove(path)
		return nil, false
	}
	t := time.Now()
	_ = os.Chtimes(path, t, t)
	return b, true
}

// readPartCovering is the bytes of want from one cached part holding them
// all.
func (c *Cache) readPartCovering(obj Object, want Range) ([]byte, bool) {
	for _, p := range c.parts(obj) {
		if p.Off <= want.Off && want.end() <= p.end() {
			if b, ok := c.readPart(obj, p); ok {
				return b[want.Off-p.Off : want.end()-p.Off], true
			}
		}
	}
	return nil, false
}

// putPart writes a part to a temporary file and renames it into its
// object's directory: a reader sees a whole part or none.
func (c *Cache) putPart(obj Object, rg Range, b []byte) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.Dir, ".fetch-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	dir, name := c.partDir(obj), partName(cachedPart{rg, checksum(b)})
	for attempt := 0; err == nil && attempt < 2; attempt++ {
		// Trim may remove an empty directory between the two steps.
		if err = os.MkdirAll(dir, 0o755); err == nil {
			if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) && attempt == 0 {
				err = nil
				continue
			}
			break
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// CachedRanges is st with ranged reads kept as parts in c: a read of
// bytes a cached part of the object (as described: location, size, ETag)
// holds is served from it without a request, and the bytes of every
// other read are kept as a part. It is for reading a registered object's
// footer, page index and bloom filters while planning: those bytes are
// the registered version's whatever the object holds now, and whatever
// reads the object's data afterwards checks that it is still that version
// (a HEAD, or requests carrying its ETag). Objects without an ETag are
// read from st alone.
func CachedRanges(st Store, c *Cache) Store {
	if c == nil {
		return st
	}
	return &cachedRanges{Store: st, cache: c}
}

type cachedRanges struct {
	Store
	cache *Cache
}

func (s *cachedRanges) ReadRange(ctx context.Context, obj Object, off, n int64) ([]byte, error) {
	if obj.ETag == "" || n <= 0 {
		return s.Store.ReadRange(ctx, obj, off, n)
	}
	if b, ok := s.cache.readPartCovering(obj, Range{off, n}); ok {
		return b, nil
	}
	b, err := s.Store.ReadRange(ctx, obj, off, n)
	if err == nil {
		// A part not kept costs a later request, not an answer.
		_ = s.cache.putPart(obj, Range{off, n}, b)
	}
	return b, err
}

// Counts are st's, when it counts.
func (s *cachedRanges) Counts() Counts {
	if c, ok := s.Store.(interface{ Counts() Counts }); ok {
		return c.Counts()
	}
	return Counts{}
}
