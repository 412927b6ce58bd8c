package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Object is one data file as its store describes it.
type Object struct {
	// Location is an absolute local path or an s3://bucket/key URL: what
	// the catalog registers.
	Location string
	Size     int64
	// ETag is the object's entity tag as the server sent it, quotes
	// included ("" for a local file). Reads made with it fail with
	// ErrChanged once the object holds other bytes.
	ETag     string
	Modified time.Time
}

// Store reads data files. Every read is of a known Object: a store
// refuses to return bytes of anything but the object as it was described
// (same size, same ETag where there is one), so statistics read once can
// never be paired with other data.
type Store interface {
	// Stat describes the object at loc now.
	Stat(ctx context.Context, loc string) (Object, error)
	// List expands a location into the data files it names, sorted by
	// location: a single object, every *.parquet below a prefix that ends
	// in "/" (or names a directory), or the matches of a glob (*, ?, [...]
	// within one path segment, as filepath.Match).
	List(ctx context.Context, pattern string) ([]Object, error)
	// ReadRange reads n bytes of obj at off.
	ReadRange(ctx context.Context, obj Object, off, n int64) ([]byte, error)
	// Fetch copies all of obj to w.
	Fetch(ctx context.Context, obj Object, w io.Writer) (int64, error)
}

// Counts are what a store has fetched so far: HTTP requests made (every
// attempt, retries included) and response body bytes received.
type Counts struct {
	Requests int64
	Bytes    int64
}

// Sub is the difference c − d: what happened between two readings.
func (c Counts) Sub(d Counts) Counts {
	return Counts{Requests: c.Requests - d.Requests, Bytes: c.Bytes - d.Bytes}
}

var (
	// ErrNotFound reports an object that does not exist (or no longer
	// does). It wraps fs.ErrNotExist.
	ErrNotFound = fmt.Errorf("no such object: %w", fs.ErrNotExist)
	// ErrChanged reports an object that no longer holds the bytes it was
	// described with: another size or another ETag.
	ErrChanged = errors.New("changed since it was registered")
	// ErrNoETag reports an object its store describes without an ETag.
	// An object is registered by its size and ETag and read only while
	// both still hold (If-Match); without an ETag, an object written over
	// with the same size could not be told from the one registered.
	ErrNoETag = errors.New("its store gives no ETag for it")
	// ErrBadLocation reports a location rocklake does not read.
	ErrBadLocation = errors.New("not a location rocklake reads")
)

// S3Scheme starts every S3 location.
const S3Scheme = "s3://"

// IsS3 reports whether loc names an S3 object or prefix.
func IsS3(loc string) bool { return strings.HasPrefix(loc, S3Scheme) }

// ParseS3 splits s3://bucket/key into bucket and key. The key may be empty
// (the whole bucket) and may hold glob characters. A key with an empty, "."
// or ".." segment is refused: S3 itself keeps such keys literally, but some
// S3-compatible servers map keys onto a file system that resolves them,
// which would let a key climb out of a data root.
func ParseS3(loc string) (bucket, key string, err error) {
	if !IsS3(loc) {
		return "", "", fmt.Errorf("%s: %w (an s3:// URL was expected)", loc, ErrBadLocation)
	}
	rest := loc[len(S3Scheme):]
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%s: %w: no bucket", loc, ErrBadLocation)
	}
	if key != "" {
		segs := strings.Split(strings.TrimSuffix(key, "/"), "/")
		for _, s := range segs {
			if s == "" || s == "." || s == ".." {
				return "", "", fmt.Errorf("%s: %w: the key has an empty, \".\" or \"..\" segment", loc, ErrBadLocation)
			}
		}
	}
	return bucket, key, nil
}

// hasGlob reports whether a key holds a glob character.
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// isParquet is the rule a directory walk uses for which files to take.
func isParquet(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".parquet") }
