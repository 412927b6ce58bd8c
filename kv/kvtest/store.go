package kvtest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// BackendEnv names the environment variable that picks the store Store
// gives: unset or "memory" for an in-memory store, "postgres" for a
// PostgreSQL store (on pgtest's server), so that the same tests check
// every backend the catalog runs on.
const BackendEnv = "ROCKLAKE_TEST_CATALOG"

var perTest sync.Map // testing.TB → database URL

var schemaSeq struct {
	sync.Mutex
	n int
}

// Store is a new, empty store for a test's catalog, of the backend
// BackendEnv picks. A PostgreSQL store lives in a schema of its own within
// one database per test, so that tests making many catalogs stay cheap.
// Packages that use it with PostgreSQL call pgtest.Main from TestMain.
func Store(tb testing.TB) kv.Store {
	tb.Helper()
	switch b := os.Getenv(BackendEnv); b {
	case "", "memory":
		return kv.NewMemory()
	case "postgres":
	default:
		tb.Fatalf("%s=%q: want memory or postgres", BackendEnv, b)
	}
	db, ok := perTest.Load(tb)
	if !ok {
		db = pgtest.URL(tb)
		perTest.Store(tb, db)
		tb.Cleanup(func() { perTest.Delete(tb) })
	}
	schemaSeq.Lock()
	schemaSeq.n++
	schema := fmt.Sprintf("catalog_%d", schemaSeq.n)
	schemaSeq.Unlock()
	u, err := url.Parse(db.(string))
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := pgkv.Init(context.Background(), u.String(), pgkv.Options{MaxConns: 8, IdleTimeout: 500 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Postgres says whether Store gives PostgreSQL stores.
func Postgres() bool { return os.Getenv(BackendEnv) == "postgres" }

// Digest hashes every key and value r holds, so that a test can show a
// failed operation left a store exactly as it was.
func Digest(t testing.TB, r kv.Reader) string {
	t.Helper()
	it, err := r.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	h := sha256.New()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(h, "%x=%x;", it.Key(), it.Value())
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
