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
	admin := pgtest.URL(t)
	s, err := pgkv.Init(ctx, admin, pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
