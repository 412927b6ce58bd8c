package ingest

import (
	"os"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// TestMain stops the PostgreSQL server that tests on that backend start
// (ROCKLAKE_TEST_CATALOG=postgres, see kvtest.Store).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
