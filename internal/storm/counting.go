package storm

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// countingStore passes everything to the PostgreSQL store and counts how
// its batch commits end: the catalog retries a refused condition (another
// writer came first) and resolves an unknown outcome inside Commit, where
// a caller cannot see it, and these counts are how often it had to. It
// passes the store's kv.WriteLocker through: a commit that keeps losing
// the fence takes the lock, and hiding it would starve the storm's
// writers as no real catalog is.
type countingStore struct {
	kv.Store
	conditionFailed atomic.Int64
	unknown         atomic.Int64
}

func (s *countingStore) NewBatch() kv.Batch { return &countingBatch{Batch: s.Store.NewBatch(), s: s} }

func (s *countingStore) LockWrites() (func() kv.Batch, func() error, error) {
	newBatch, release, err := s.Store.(kv.WriteLocker).LockWrites()
	if err != nil {
		return nil, nil, err
	}
	return func() kv.Batch { return &countingBatch{Batch: newBatch(), s: s} }, release, nil
}

type countingBatch struct {
	kv.Batch
	s *countingStore
}

func (b *countingBatch) Commit() error {
	err := b.Batch.Commit()
	switch {
	case errors.Is(err, kv.ErrConditionFailed):
		b.s.conditionFailed.Add(1)
	case errors.Is(err, kv.ErrUnknownOutcome):
		b.s.unknown.Add(1)
	}
	return err
}

// openCatalog opens the catalog as catalog.Open does for a PostgreSQL
// location, through a countingStore.
func openCatalog(loc string, o pgkv.Options) (*catalog.Catalog, *countingStore, error) {
	st, err := pgkv.Open(context.Background(), loc, o)
	if err != nil {
		return nil, nil, err
	}
	cs := &countingStore{Store: st}
	c, err := catalog.OpenStore(cs, catalog.Options{Postgres: o})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return c, cs, nil
}
