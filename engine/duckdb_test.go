package engine

import "testing"

// The library's own answer must be what a database reports: version prints
// it without opening one.
func TestDuckDBVersionIsSelectVersion(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT version()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if got := DuckDBVersion(); got != v {
		t.Fatalf("DuckDBVersion() = %q, SELECT version() = %q", got, v)
	}
}
