package prune

import "github.com/rocklake/rocklake/pqmeta"

// The file's own Parquet metadata (bloom filters, page index) comes from
// one reader; these names are the planner's only tie to its package.
type (
	fileIndex = pqmeta.FileIndex
	page      = pqmeta.Page
)

var openIndex = pqmeta.OpenIndex
