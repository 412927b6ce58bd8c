package pgkv_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/kv/pgkv"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestConformance(t *testing.T) {
	// Range deletes of the suite's sizes span several statements.
	defer pgkv.SetRangeChunk(7_000)()
	urls := map[kv.Store]string{}
	kvtest.Run(t, kvtest.Backend{
		Open: func(t *testing.T) kv.Store {
			url := pgtest.URL(t)
			s, err := pgkv.Init(context.Background(), url, pgkv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			urls[s] = url
			t.Cleanup(func() { s.Close() })
			return s
		},
		Reopen: func(t *testing.T, s kv.Store) kv.Store {
			url := urls[s]
			s.Close()
			s2, err := pgkv.Open(context.Background(), url, pgkv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s2.Close() })
			return s2
		},
	})
}

// A snapshot whose connection the server ended (a terminated backend, a
// restart) closes without error: its transaction ended with the
// connection.
func TestSnapshotCloseAfterLostConnection(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	s, err := pgkv.Init(ctx, url, pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	n := terminateBackends(t, ctx, url)
	if n == 0 {
		t.Fatal("no backend of the store was terminated")
	}
	if _, err := sn.Get([]byte("k")); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("Get on a terminated snapshot: %v, want kv.ErrUnavailable", err)
	}
	if err := sn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// Connections the server ended while they sat idle in the pool (a
// terminated backend, a restart) cost no failed read: a snapshot begins
// on a live connection, while one can be had.
func TestSnapshotSkipsDeadPooledConnections(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	s, err := pgkv.Init(ctx, url, pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Several idle connections in the pool.
	var snaps []kv.Snapshot
	for range 4 {
		sn, err := s.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, sn)
	}
	for _, sn := range snaps {
		if err := sn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	n := terminateBackends(t, ctx, url)
	if n < 4 {
		t.Fatalf("%d backends of the store terminated, want its 4 idle ones", n)
	}
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatalf("a snapshot after the pool's connections were terminated: %v", err)
	}
	if _, err := sn.Get([]byte("k")); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Get: %v, want kv.ErrNotFound", err)
	}
	sn.Close()
}

// terminateBackends ends every rocklake connection to url's database, as
// an administrator or a restart would, and says how many it ended.
func terminateBackends(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'rocklake' AND datname = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
