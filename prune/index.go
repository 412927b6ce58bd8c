package prune

import (
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
)

// The file's own Parquet metadata (bloom filters, page index) comes from
// one reader; these names are the planner's only tie to its package.
type (
	fileIndex = pqmeta.FileIndex
	page      = pqmeta.Page
)

var openIndex = pqmeta.OpenIndex

// openLocalIndex opens a registered local file's index structures only
// while the file is the one registered: the page index and bloom filters
// of a file rewritten in place would answer for rows the catalog's
// statistics never saw, and skip the file before any read refuses it.
func openLocalIndex(f catalog.DataFile, loc string) (*fileIndex, error) {
	return pqmeta.OpenIndexAs(loc, pqmeta.Stamp{Size: f.FileSizeBytes, Modified: f.ModifiedUnixNanos,
		Changed: f.ChangedUnixNanos, ID: pqmeta.FileIdentity(f.Identity)})
}
