// Package storage reads data files where they live: on the local file
// system (Local) or in an S3-compatible object store (S3), behind one small
// interface (Store: Stat, List, ReadRange, Fetch).
//
//	location                     store   identity checked on every read
//	/abs/path/f.parquet          Local   size and modification time
//	s3://bucket/key.parquet      S3      size and ETag (If-Match)
//
// Every read names the Object it expects, as listed or registered, and a
// store refuses to return bytes of anything else (ErrChanged, ErrNotFound):
// statistics read once are never paired with other data.
//
// Reading a Parquet footer from an object is one request: RangeReader
// reads the last FooterPrefetch (64 KiB) bytes up front and serves reads
// inside them without asking again; a larger footer costs a second
// request.
//
// Reading part of an object (a query's kept pages) goes through a
// PartReader: the reader announces the byte ranges it will need
// (Prefetch), ranges less than PartGap (64 KiB) apart are fetched as one
// request, no request is longer than PartMaxRequest (8 MiB), and at most
// PartWorkers (8) are in flight per object; bytes nobody announced are
// still fetched when read. Parts are kept in the Cache beside whole
// objects, under the same budget and eviction:
//
//	DIR/
//	  <loc>-<etag>-0-<size>.parquet          a whole object (what DuckDB reads)
//	  <loc>-<etag>-0-<size>.parquet.crc32c   its CRC-32C, taken as it was fetched,
//	                                         where it is not an extended attribute
//	  parts/<loc>-<etag>-<size>/             one version of one object
//	    <offset>-<length>-<crc32c>.part      bytes [offset, offset+length) of it
//	  .fetch-*                               a fetch in progress
//
// where <loc> and <etag> are the first bytes of the SHA-256 of the
// location and the ETag: a part is only ever served for the version it was
// read from. A copy is checked against its CRC-32C before it is used, since
// one damaged in place keeps its length: a whole copy that fails is
// fetched again (twice failing is ErrDamaged, naming the object), a part
// that fails is dropped and read from the store. CachedRanges keeps what planning reads (page indexes, bloom
// filters, the tail) as parts too, so the partial scan finds the tail
// there and checks the object with one HEAD instead of reading it again.
//
// The S3 client is aws-sdk-go-v2 rather than minio-go: it reads the
// configuration users already give S3 tools (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, profiles and
// ~/.aws files) through the same default chain as the AWS CLI, its retryer
// already classifies throttling, 5xx answers, timeouts and connection
// errors and backs off with full jitter, and it is pure Go, so the core
// packages stay free of cgo. Path-style addressing, which most
// S3-compatible servers need, is AWS_S3_FORCE_PATH_STYLE (a variable
// other tools read too; the SDK itself has none). Credentials stay inside
// the SDK's chain: this package never formats, logs or stores them, and
// its errors name objects and operations only.
//
// A store that cannot be reached at all (its name does not resolve, the
// connection is refused or times out) is one failure, not one per
// request: the requests to an endpoint share one request's retry budget
// (MaxAttempts probes, one at a time, within DownAfter, 10 s by default),
// then all fail at once with one UnreachableError naming the endpoint,
// and so do those made in the next second or two, without an attempt.
// ForEach, the fan-out of callers reading many objects, stops starting
// reads at that error and reports it once, with the count of objects not
// reached. Only a failure to connect counts: throttling, 5xx answers and
// broken connections are retried per request as before.
//
// An object without an ETag cannot be registered (ErrNoETag): every read
// checks the ETag, and without one a same-size object written over it
// would pass for it.
//
// Counts are taken at the HTTP transport, so they include every attempt
// and every byte of every response body, listings included. A request
// failed at once by an endpoint that is down is no attempt.
package storage
