//go:build !unix

package ingest

import (
	"io/fs"
	"os"

	"rocklake/catalog"
)

// identityOf is unknown where stat has no device and inode: duplicates are
// then found by path only.
func identityOf(fs.FileInfo) catalog.FileIdentity { return catalog.FileIdentity{} }

const openFlags = os.O_RDONLY
