package pgkv_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// Compact vacuums the table while a reader holds a snapshot open and a
// writer commits (VACUUM FULL or CLUSTER would wait for the reader's lock,
// and the writer for them); the reader still reads what it read; a role
// that may read and write the table but does not own it is told that
// compacting needs the owner, rather than getting VACUUM's warning and
// nothing done.
func TestCompactVacuumsWithoutBlocking(t *testing.T) {
	ctx := context.Background()
	s, admin := initAdminStore(t)
	b := s.NewBatch()
	for i := range 2000 {
		b.Set([]byte(fmt.Sprintf("k%05d", i)), []byte(strings.Repeat("v", 100)))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	if _, err := sn.Get([]byte("k00001")); err != nil { // the reader holds its lock on the table from here
		t.Fatal(err)
	}
	b = s.NewBatch()
	for i := range 2000 {
		b.Delete([]byte(fmt.Sprintf("k%05d", i)))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Compact(nil, nil) }()
	b = s.NewBatch()
	b.Set([]byte("during"), []byte("x"))
	if err := b.Commit(); err != nil {
		t.Fatalf("a commit while compacting: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Compact waited a minute behind an open reader")
	}
	if v, err := sn.Get([]byte("k00042")); err != nil || len(v) != 100 {
		t.Fatalf("the open snapshot after Compact: %q %v", v, err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var vacuums int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := conn.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'rocklake_kv'`).Scan(&vacuums); err != nil {
			t.Fatal(err)
		}
		if vacuums > 0 {
			break
		}
	}
	if vacuums == 0 {
		t.Fatal("Compact did not vacuum the table")
	}

	// A role that reads and writes the table but does not own it.
	u, _ := url.Parse(admin)
	role := "rl_rw_" + strings.TrimPrefix(u.Path, "/rl_")
	role = role[:min(len(role), 60)]
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE ROLE `+ident+` LOGIN PASSWORD 'rw-role-pw-1'; GRANT SELECT, INSERT, UPDATE, DELETE ON rocklake_kv TO `+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP OWNED BY `+ident+`; DROP ROLE `+ident); err != nil {
			t.Error(err)
		}
	})
	as := *u
	as.User = url.UserPassword(role, "rw-role-pw-1")
	rw, err := pgkv.Open(ctx, as.String(), pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := rw.Compact(nil, nil); err == nil || !strings.Contains(err.Error(), "needs its owner") || strings.Contains(err.Error(), "rw-role-pw-1") {
		t.Fatalf("Compact by a role that does not own the table: %v", err)
	}
}

// After most keys are deleted, Compact rebuilds the primary key (VACUUM
// alone keeps its pages), and the keys left are all there; it does not
// rebuild indexes that are not bloated; a reader holding a transaction
// open past the rebuild's wait keeps the old index in use (and reads on;
// the rebuild's half-built copy may stay until it is gone), and the next
// Compact, once it is gone, drops what rebuilds left half built (and an
// index whose building failed) and rebuilds.
func TestCompactRebuildsBloatedIndexes(t *testing.T) {
	ctx := context.Background()
	s, admin := initAdminStore(t)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	index := func() (node, size int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT pg_relation_filenode(i.indexrelid)::int8, pg_relation_size(i.indexrelid)
			FROM pg_index i WHERE i.indrelid = 'rocklake_kv'::regclass AND i.indisprimary`).Scan(&node, &size); err != nil {
			t.Fatal(err)
		}
		return node, size
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("t/%08d/column/%08d", i%97, i)) }
	// fill writes n keys and deletes all but every 300th.
	fill := func(n int) {
		t.Helper()
		b := s.NewBatch()
		for i := range n {
			b.Set(key(i), []byte(strings.Repeat("v", 50)))
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b = s.NewBatch()
		for i := range n {
			if i%300 != 0 {
				b.Delete(key(i))
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300_000
	fill(n)
	before, bloated := index()
	if err := s.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	after, size := index()
	if after == before || size > bloated/10 {
		t.Fatalf("index after Compact: file %d (was %d), %d bytes (was %d)", after, before, size, bloated)
	}
	for i := 0; i < n; i += 300 {
		if _, err := s.Get(key(i)); err != nil {
			t.Fatalf("key %d after the rebuild: %v", i, err)
		}
	}
	if err := s.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := index(); again != after {
		t.Fatal("an index that is not bloated was rebuilt")
	}

	// A reader's transaction open throughout.
	fill(n)
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sn.Get(key(300)); err != nil {
		t.Fatal(err)
	}
	restore := pgkv.SetReindexLockWait(time.Second)
	defer restore()
	held, _ := index()
	if err := s.Compact(nil, nil); err != nil {
		t.Fatalf("Compact behind an open reader: %v", err)
	}
	if now, _ := index(); now != held {
		t.Fatal("the index was rebuilt while a reader's transaction was open")
	}
	var invalid int
	count := func() int {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`).Scan(&invalid); err != nil {
			t.Fatal(err)
		}
		return invalid
	}
	if _, err := sn.Get(key(600)); err != nil {
		t.Fatalf("the reader after Compact: %v", err)
	}
	sn.Close()
	// An interrupted rebuild's half-built index.
	if _, err := conn.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY rl_half_built ON rocklake_kv ((1))`); err == nil {
		t.Fatal("a unique index on a constant was built")
	}
	if count() == 0 {
		t.Fatal("no invalid index after a failed CREATE INDEX CONCURRENTLY")
	}
	if err := s.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if now, _ := index(); now == held || count() != 0 {
		t.Fatalf("after the reader: rebuilt %v, %d invalid indexes left", now != held, invalid)
	}
}

// initAdminStore is a store in a new database of the test cluster, made
// by its superuser, whose URL it also gives.
func initAdminStore(t *testing.T) (*pgkv.Store, string) {
	t.Helper()
	admin := pgtest.URL(t)
	s, err := pgkv.Init(context.Background(), admin, pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, admin
}
