package prune

import "rocklake/ingest"

// The file's own Parquet metadata (bloom filters, page index) comes from
// one reader; these names are the planner's only tie to its package.
type (
	fileIndex = ingest.FileIndex
	page      = ingest.Page
)

var openIndex = ingest.OpenIndex
