package ducklake_test

import (
	"os"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// TestMain stops the PostgreSQL server the PostgreSQL source test starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
