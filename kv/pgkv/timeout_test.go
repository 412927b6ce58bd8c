package pgkv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// A batch of many statements commits when each statement is within the
// store's timeout, however long they take together: the timeout bounds a
// statement, and a large commit (an expiry of a million files) is many.
// A trigger makes every write statement take 500 ms; the batch sends six
// (8 MB each) against a 2 s timeout. A single statement past the timeout
// still fails. So do range deletes, which go in one pipeline.
func TestTimeoutIsPerStatement(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	s, err := pgkv.Init(ctx, url, pgkv.Options{Timeout: 2 * time.Second, RetryFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	slow := func(sleep string) {
		t.Helper()
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE OR REPLACE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(%s); RETURN NULL; END $$;
			CREATE OR REPLACE TRIGGER slow_write BEFORE INSERT OR DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION slow_write()`, sleep, pgx.Identifier{pgkv.TableName}.Sanitize()))
		if err != nil {
			t.Fatal(err)
		}
	}
	slow("0.5")
	b := s.NewBatch()
	val := make([]byte, 1<<20)
	for i := range 48 { // 48 MB: six statements of 8 MB
		if err := b.Set(fmt.Appendf(nil, "k%03d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := b.Commit(); err != nil {
		t.Fatalf("a commit of statements each within the timeout: %v (after %v)", err, time.Since(start))
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("the commit took %v: fewer slow statements than it should have sent", took)
	}
	if v, err := s.Get([]byte("k047")); err != nil || len(v) != len(val) {
		t.Fatalf("after the commit: %d bytes, %v", len(v), err)
	}
	// Range deletes go in one pipeline (deleteRanges): six of them, 500
	// ms each, commit against the same 2 s timeout.
	b = s.NewBatch()
	rd := b.(kv.RangeDeleter)
	for i := range 6 {
		if err := rd.DeleteRange(fmt.Appendf(nil, "k%03d", 8*i), fmt.Appendf(nil, "k%03d", 8*i+4)); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	if err := b.Commit(); err != nil {
		t.Fatalf("a commit of range deletes each within the timeout: %v (after %v)", err, time.Since(start))
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("the range deletes took %v: fewer slow statements than six", took)
	}
	for i := range 48 {
		_, err := s.Get(fmt.Appendf(nil, "k%03d", i))
		if gone := i%8 < 4; gone != errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("key k%03d after the range deletes: %v (want gone: %v)", i, err, gone)
		}
	}
	slow("3")
	b = s.NewBatch()
	_ = b.Set([]byte("late"), []byte("x"))
	if err := b.Commit(); err == nil {
		t.Fatal("a statement past the timeout committed")
	}
	if _, err := s.Get([]byte("late")); err == nil {
		t.Fatal("a timed-out commit left its row")
	}
}
