package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/rocklake/rocklake/kv"
)

// HeadRecordFile is the file, beside the store in the catalog directory,
// that records the id of the newest snapshot a commit acknowledged.
//
// Pebble recovers its write-ahead log by stopping at the first damaged
// record of the newest log, which it cannot tell from a write torn by a
// crash; a damaged byte in the last record silently drops an acknowledged
// commit, and the next commit would reuse its id. The record is written
// and synced after each commit's own synced batch and checked at Open, so
// a store that comes back older than what was acknowledged is refused.
//
// Layout: two 32-byte slots, the one for an id being id%2, each
//
//	"RLHD" | version (4, big-endian) | snapshot id (8) | reserved (12) | crc32c (4)
//
// so that a write torn across a slot leaves the other one readable. The
// larger id of the valid slots is the record.
const HeadRecordFile = "LAST-SNAPSHOT"

const (
	headSlot    = 32
	headMagic   = "RLHD"
	headVersion = 1
)

// ErrLostSnapshot reports a snapshot that a commit acknowledged and the
// store no longer holds.
var ErrLostSnapshot = errors.New("an acknowledged snapshot is missing")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type headRecord struct {
	mu   sync.Mutex
	f    *os.File // nil when read-only and there is no record yet
	last int64
	ok   bool
	// readOnly records nothing: the catalog's store was opened read-only.
	readOnly bool
}

// openHeadRecord opens the record in dir and reads it; ok is false when it
// holds no valid slot. A read-write open creates it when missing; a
// read-only one writes nothing, so that readers leave the directory as
// they found it and pay for no sync.
func openHeadRecord(dir string, readOnly bool) (*headRecord, error) {
	path := filepath.Join(dir, HeadRecordFile)
	if readOnly {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			return &headRecord{readOnly: true}, nil
		}
		if err != nil {
			return nil, err
		}
		return readHeadRecord(path, &headRecord{f: f, readOnly: true})
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if os.IsNotExist(statErr) {
		// The new name must survive a crash too.
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return readHeadRecord(path, &headRecord{f: f})
}

func readHeadRecord(path string, h *headRecord) (*headRecord, error) {
	buf := make([]byte, 2*headSlot)
	n, _ := h.f.ReadAt(buf, 0)
	for s := 0; s+headSlot <= n; s += headSlot {
		if id, ok := decodeHeadSlot(buf[s : s+headSlot]); ok && (!h.ok || id > h.last) {
			h.last, h.ok = id, true
		}
	}
	if n > 0 && !h.ok {
		h.f.Close()
		return nil, fmt.Errorf("%s: %w: no valid record in %d bytes", path, ErrCorrupt, n)
	}
	return h, nil
}

func decodeHeadSlot(b []byte) (int64, bool) {
	if string(b[:4]) != headMagic || binary.BigEndian.Uint32(b[4:8]) != headVersion {
		return 0, false
	}
	if crc32.Checksum(b[:headSlot-4], castagnoli) != binary.BigEndian.Uint32(b[headSlot-4:]) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[8:16])), true
}

// advance records id when it is newer than the record, synced before it
// returns.
func (h *headRecord) advance(id int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok && id <= h.last {
		return nil
	}
	if h.readOnly {
		return kv.ErrReadOnly
	}
	b := make([]byte, headSlot)
	copy(b, headMagic)
	binary.BigEndian.PutUint32(b[4:8], headVersion)
	binary.BigEndian.PutUint64(b[8:16], uint64(id))
	binary.BigEndian.PutUint32(b[headSlot-4:], crc32.Checksum(b[:headSlot-4], castagnoli))
	if _, err := h.f.WriteAt(b, int64(id%2)*headSlot); err != nil {
		return err
	}
	if err := h.f.Sync(); err != nil {
		return err
	}
	h.last, h.ok = id, true
	return nil
}

func (h *headRecord) close() error {
	if h.f == nil {
		return nil
	}
	return h.f.Close()
}

// checkHead compares the store's newest snapshot with the record: a store
// behind the record lost acknowledged commits. A store ahead of it (a crash
// between a commit's batch and its record) moves the record forward.
func checkHead(dir string, store kv.Store, h *headRecord) error {
	head, err := latestSnapshot(store)
	if err != nil {
		return err
	}
	if h.ok && head.ID < h.last {
		return fmt.Errorf("%w: snapshot %d was committed, but the newest snapshot the store holds is %d (%s records %d): "+
			"the store's log or tables lost acknowledged writes. Nothing was changed and no commit is possible; "+
			"restore the catalog directory from a backup", ErrLostSnapshot, h.last, head.ID, HeadRecordFile, h.last)
	}
	// A full disk or a read-only open may refuse this; the record then
	// lags, which is safe.
	_ = h.advance(head.ID)
	return nil
}

// recordingStore records the newest snapshot each commit writes, after the
// commit's batch is durable. It finds it by key: a batch that sets a
// snapshot row commits that snapshot.
type recordingStore struct {
	kv.Store
	h *headRecord
}

func (r *recordingStore) NewBatch() kv.Batch {
	b := &recordingBatch{Batch: r.Store.NewBatch(), h: r.h, top: -1}
	if _, ok := b.Batch.(kv.RangeDeleter); ok {
		return rangeRecordingBatch{b}
	}
	return b
}

// rangeRecordingBatch is a recordingBatch over a batch that deletes
// ranges (kv.RangeDeleter), which it passes through: only a batch that
// has them may say so, since callers fall back to deleting key by key
// where it does not. A range delete sets no snapshot row.
type rangeRecordingBatch struct{ *recordingBatch }

func (b rangeRecordingBatch) DeleteRange(start, end []byte) error {
	return b.Batch.(kv.RangeDeleter).DeleteRange(start, end)
}

// Reserve passes the hint on (kv.Reserver).
func (b *recordingBatch) Reserve(bytes int) {
	if r, ok := b.Batch.(kv.Reserver); ok {
		r.Reserve(bytes)
	}
}

func (r *recordingStore) Close() error {
	err := r.Store.Close()
	if cerr := r.h.close(); err == nil {
		err = cerr
	}
	return err
}

// Compact and the sizes pass through: tools find them by type assertion.
func (r *recordingStore) Compact(lower, upper []byte) error {
	if c, ok := r.Store.(kv.Compacter); ok {
		return c.Compact(lower, upper)
	}
	return nil
}

func (r *recordingStore) DiskSize() (int64, error) {
	if s, ok := r.Store.(kv.Sizer); ok {
		return s.DiskSize()
	}
	return 0, errors.New("kv: store cannot measure itself")
}

func (r *recordingStore) RangeDiskSize(lower, upper []byte) (int64, error) {
	if s, ok := r.Store.(kv.Sizer); ok {
		return s.RangeDiskSize(lower, upper)
	}
	return 0, errors.New("kv: store cannot measure itself")
}

type recordingBatch struct {
	kv.Batch
	h   *headRecord
	top int64
}

func (b *recordingBatch) Set(k, v []byte) error {
	if len(k) == 9 && k[0] == tagSnapshot {
		if id, err := idAt(k, 0); err == nil && id > b.top {
			b.top = id
		}
	}
	return b.Batch.Set(k, v)
}

// SetInPlace passes through (kv.InPlaceSetter); Set's snapshot rows are
// small and never written in place.
func (b *recordingBatch) SetInPlace(key []byte, n int) ([]byte, func() error) {
	if s, ok := b.Batch.(kv.InPlaceSetter); ok && !(len(key) == 9 && key[0] == tagSnapshot) {
		return s.SetInPlace(key, n)
	}
	v := make([]byte, n)
	return v, func() error { return b.Set(key, v) }
}

func (b *recordingBatch) Commit() error {
	if err := b.Batch.Commit(); err != nil {
		return err
	}
	if b.top >= 0 {
		// The commit is durable whatever happens here; a record that
		// could not be written lags, which can hide a later loss of this
		// commit but never reports a false one.
		_ = b.h.advance(b.top)
	}
	return nil
}
