package iceberg

import (
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/prune"
)

// Scan is a client's scan planned by rocklake's planner.
type Scan struct {
	Table  *Table
	Filter *Filter
	// Plan is rocklake's plan: the files kept, with the row groups (and,
	// with pages, the row ranges) that may hold a matching row.
	Plan *prune.Plan
}

// PlanScan plans a scan of a table at the reader's snapshot for an
// Iceberg filter (REST JSON; empty for none) with rocklake's planner:
// membership and bloom filters, row-group and page statistics. A filter
// that translates to a predicate the planner refuses (a type rule the
// translation did not foresee) is planned as true, keeping every file:
// a term is never guessed.
func PlanScan(r *catalog.Reader, name string, filter []byte, caseSensitive bool) (*Scan, error) {
	t, err := Load(r, name)
	if err != nil {
		return nil, err
	}
	return PlanScanOf(r, t, filter, caseSensitive)
}

// PlanScanOf is PlanScan of a table already loaded from the reader.
func PlanScanOf(r *catalog.Reader, t *Table, filter []byte, caseSensitive bool) (*Scan, error) {
	f, err := TranslateFilter(t.Schema, filter, caseSensitive)
	if err != nil {
		return nil, err
	}
	p, err := prune.PlanTable(r, t.Name, f.Predicate, prune.Options{})
	if err != nil {
		f = &Filter{Predicate: "true", Untranslated: f.Untranslated + 1}
		if p, err = prune.PlanTable(r, t.Name, "true", prune.Options{}); err != nil {
			return nil, err
		}
	}
	return &Scan{Table: t, Filter: f, Plan: p}, nil
}
