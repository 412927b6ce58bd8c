package catalog

import (
	"os"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// TestMain stops the PostgreSQL server that tests on that backend start
// (ROCKLAKE_TEST_CATALOG=postgres, see kvtest.Store).
func TestMain(m *testing.M) {
	// Every commit attempt built from an earlier attempt's reads is
	// checked against one built from fresh reads (reread.go).
	verifyRereads = true
	// And records kept on the memory store too, which several handles
	// share in these tests as processes share PostgreSQL.
	recordAllStores = true
	os.Exit(pgtest.Main(m))
}
