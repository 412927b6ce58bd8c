package catalog

import (
	"fmt"
	"sync"

	"github.com/rocklake/rocklake/kv"
)

// Speculate opens a private catalog over the catalog's latest state: it
// reads what c holds now and takes commits of its own, which nothing else
// sees and which never reach c's store (kv.NewOverlay over a snapshot of
// it). A transaction of writes commits each statement into one, so that
// its later statements and queries read its own writes, and at its end
// commits the net effect to c itself (or closes the speculation, leaving
// nothing). Base is the snapshot it began at; its own commits take the
// ids after it, which c may give to other commits in the meantime: a
// speculation's snapshot ids and file ids mean nothing to c.
//
// The speculation holds a snapshot of c's store until it is closed (on
// PostgreSQL, a connection): where the store bounds such snapshots
// (kv.SnapshotLimiter), a speculation past the bound fails with ErrBusy
// instead of taking the connections every other reader and writer needs.
func (c *Catalog) Speculate() (spec *Catalog, base Snapshot, err error) {
	release := func() {}
	if l, ok := c.store.(kv.SnapshotLimiter); ok {
		limit := int64(l.SnapshotLimit())
		if n := c.specOpen.Add(1); n > limit {
			c.specOpen.Add(-1)
			return nil, Snapshot{}, fmt.Errorf("%w: %d already, as many as %s leaves room for beside its readers and writers; commit or roll back one, or raise the connection pool (pool_max_conns in the catalog's URL)",
				ErrBusy, limit, c.Location())
		}
		var once sync.Once
		release = func() { once.Do(func() { c.specOpen.Add(-1) }) }
	}
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		release()
		return nil, Snapshot{}, err
	}
	if base, err = latestSnapshot(kvs); err != nil {
		kvs.Close()
		release()
		return nil, Snapshot{}, fmt.Errorf("speculate: %w", err)
	}
	spec = &Catalog{store: kv.NewOverlay(kvs), dir: c.dir, location: c.location, now: c.now, dataRoot: c.dataRoot, uuid: c.uuid,
		plan: planCache{budget: c.plan.budget}, speculative: true, specBase: base.ID, onClose: release}
	return spec, base, nil
}

// Speculation says whether c is a speculation (Speculate), and the
// snapshot of its catalog it began at: the snapshots after it are its own
// and not that catalog's, so that time travel in it reads no further.
func (c *Catalog) Speculation() (base int64, ok bool) { return c.specBase, c.speculative }
