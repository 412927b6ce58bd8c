package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// PartSize is the part size of a multipart upload, and the size from
// which a file is uploaded in parts: a failed part is retried alone, not
// the whole file.
const PartSize = 16 << 20

// Put uploads a local file as the object at loc and describes the object
// made. A file of PartSize or more goes up in parts; an upload that fails
// part-way is aborted, leaving no parts behind. Each request is retried by
// the SDK (its body is a seekable section of the file).
func (s *S3) Put(ctx context.Context, loc, path string) (Object, error) {
	bucket, key, err := ParseS3(loc)
	if err != nil {
		return Object{}, err
	}
	if key == "" || hasGlob(key) {
		return Object{}, fmt.Errorf("%s: %w: not a single object", loc, ErrBadLocation)
	}
	f, err := os.Open(path)
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Object{}, err
	}
	size := st.Size()
	if size < PartSize {
		out, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: io.NewSectionReader(f, 0, size), ContentLength: aws.Int64(size)})
		if err != nil {
			return Object{}, s.fail(loc, "PUT", "", err)
		}
		return Object{Location: loc, Size: size, ETag: aws.ToString(out.ETag)}, nil
	}
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return Object{}, s.fail(loc, "multipart upload", "", err)
	}
	abort := func(err error) (Object, error) {
		_, aerr := s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId})
		return Object{}, errors.Join(err, aerr)
	}
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < size; off, n = off+PartSize, n+1 {
		length := min(PartSize, size-off)
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(n),
			Body: io.NewSectionReader(f, off, length), ContentLength: aws.Int64(length)})
		if err != nil {
			return abort(s.fail(loc, fmt.Sprintf("upload part %d", n), "", err))
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	out, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return abort(s.fail(loc, "complete multipart upload", "", err))
	}
	return Object{Location: loc, Size: size, ETag: aws.ToString(out.ETag)}, nil
}

// Delete removes the object at loc; one that does not exist is no error.
func (s *S3) Delete(ctx context.Context, loc string) error {
	bucket, key, err := ParseS3(loc)
	if err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
		if err := s.fail(loc, "DELETE", "", err); !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// Any reports whether some object's key starts with the prefix of loc
// (s3://bucket/prefix): one request.
func (s *S3) Any(ctx context.Context, loc string) (bool, error) {
	bucket, prefix, err := ParseS3(loc)
	if err != nil {
		return false, err
	}
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, s.fail(loc, "LIST", "", err)
	}
	return len(out.Contents) > 0, nil
}

// EnvDeleter deletes objects through an S3 store made from the environment
// when first needed (catalog.CleanupOptions.DeleteObject).
func EnvDeleter(ctx context.Context) func(loc string) error {
	e := NewEnvStore(ctx)
	return func(loc string) error { return e.Delete(ctx, loc) }
}

// PutBytes writes body as the object at loc (a lease, a tombstone: small
// objects rocklake keeps beside a write's files).
func (s *S3) PutBytes(ctx context.Context, loc string, body []byte) error {
	bucket, key, err := ParseS3(loc)
	if err != nil {
		return err
	}
	if key == "" || hasGlob(key) {
		return fmt.Errorf("%s: %w: not a single object", loc, ErrBadLocation)
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return s.fail(loc, "PUT", "", err)
	}
	return nil
}

// Exists reports whether the object at loc exists: one HEAD request.
func (s *S3) Exists(ctx context.Context, loc string) (bool, error) {
	_, err := s.Stat(ctx, loc)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ReadSmall reads the whole object at loc, refusing one of more than max
// bytes.
func (s *S3) ReadSmall(ctx context.Context, loc string, max int64) ([]byte, error) {
	bucket, key, err := ParseS3(loc)
	if err != nil {
		return nil, err
	}
	if key == "" || hasGlob(key) {
		return nil, fmt.Errorf("%s: %w: not a single object", loc, ErrBadLocation)
	}
	// One GET, read up to one byte past max: a larger object is refused
	// without reading it all.
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, s.fail(loc, "GET", "", err)
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); n > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d expected", loc, n, max)
	}
	body, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, s.fail(loc, "GET", "", err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%s: more than the %d bytes expected", loc, max)
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

// Walk calls fn for every object whose location starts with the prefix
// loc (s3://bucket/prefix), in key order, with its last modification
// time: one LIST request per 1,000 keys. It returns the store's own time
// when the listing began (its first answer's Date header; zero when the
// answer has none), against which modification times are compared
// without trusting this machine's clock.
func (s *S3) Walk(ctx context.Context, loc string, fn func(loc string, modified time.Time) error) (time.Time, error) {
	bucket, prefix, err := ParseS3(loc)
	if err != nil {
		return time.Time{}, err
	}
	var now time.Time
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for first := true; p.HasMorePages(); first = false {
		page, err := p.NextPage(ctx)
		if err != nil {
			return time.Time{}, s.fail(loc, "LIST", "", err)
		}
		if first {
			if raw, ok := awsmiddleware.GetRawResponse(page.ResultMetadata).(*smithyhttp.Response); ok {
				now, _ = http.ParseTime(raw.Header.Get("Date"))
			}
		}
		for _, o := range page.Contents {
			if err := fn(S3Scheme+bucket+"/"+aws.ToString(o.Key), aws.ToTime(o.LastModified)); err != nil {
				return time.Time{}, err
			}
		}
	}
	return now, nil
}

// AbortUploads aborts the unfinished multipart uploads under the prefix of
// loc (s3://bucket/prefix) that were started before the time given, and
// returns each as "s3://bucket/key (upload <id>)", and how many younger
// ones it left; with dryRun it only lists them. A writer killed during
// a large upload leaves its parts stored, and billed, but listed nowhere
// else: orphan cleanup aborts those of writes it has given up on. An
// upload already gone (finished or aborted since the listing) is no
// error.
func (s *S3) AbortUploads(ctx context.Context, loc string, before time.Time, dryRun bool) (aborted []string, younger int, err error) {
	bucket, prefix, err := ParseS3(loc)
	if err != nil {
		return nil, 0, err
	}
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return aborted, younger, s.fail(loc, "list multipart uploads", "", err)
		}
		for _, u := range page.Uploads {
			if u.Initiated != nil && !u.Initiated.Before(before) {
				younger++
				continue
			}
			key := aws.ToString(u.Key)
			name := fmt.Sprintf("%s%s/%s (upload %s)", S3Scheme, bucket, key, aws.ToString(u.UploadId))
			if dryRun {
				aborted = append(aborted, name)
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: u.UploadId})
			if err != nil {
				var ae smithy.APIError
				if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload" {
					continue
				}
				return aborted, younger, s.fail(S3Scheme+bucket+"/"+key, "abort multipart upload", "", err)
			}
			aborted = append(aborted, name)
		}
	}
	return aborted, younger, nil
}

// ObjectStore is what a write's lease and orphan cleanup need of a bucket
// (catalog.ObjectStore): small objects put, tested, read and deleted, and
// a prefix listed with the store's own clock.
type ObjectStore interface {
	PutBytes(ctx context.Context, loc string, body []byte) error
	Exists(ctx context.Context, loc string) (bool, error)
	ReadSmall(ctx context.Context, loc string, max int64) ([]byte, error)
	Delete(ctx context.Context, loc string) error
	Walk(ctx context.Context, prefix string, fn func(loc string, modified time.Time) error) (time.Time, error)
}

// LazyStore is an ObjectStore made by its constructor when first used:
// cleanup of a lake of local files never meets an object, and needs no S3
// settings.
type LazyStore struct {
	make func() (ObjectStore, error)
	once sync.Once
	st   ObjectStore
	err  error
}

// NewLazyStore returns a store made by make when first used.
func NewLazyStore(make func() (ObjectStore, error)) *LazyStore { return &LazyStore{make: make} }

// NewEnvStore is the S3 store the environment describes
// (S3OptionsFromEnv), made with ctx when first used.
func NewEnvStore(ctx context.Context) *LazyStore {
	return NewLazyStore(func() (ObjectStore, error) {
		s, err := NewS3(ctx, S3OptionsFromEnv())
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

func (l *LazyStore) get() (ObjectStore, error) {
	l.once.Do(func() { l.st, l.err = l.make() })
	return l.st, l.err
}

// PutBytes is the store's PutBytes.
func (l *LazyStore) PutBytes(ctx context.Context, loc string, body []byte) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.PutBytes(ctx, loc, body)
}

// Exists is the store's Exists.
func (l *LazyStore) Exists(ctx context.Context, loc string) (bool, error) {
	st, err := l.get()
	if err != nil {
		return false, err
	}
	return st.Exists(ctx, loc)
}

// ReadSmall is the store's ReadSmall.
func (l *LazyStore) ReadSmall(ctx context.Context, loc string, max int64) ([]byte, error) {
	st, err := l.get()
	if err != nil {
		return nil, err
	}
	return st.ReadSmall(ctx, loc, max)
}

// Delete is the store's Delete.
func (l *LazyStore) Delete(ctx context.Context, loc string) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.Delete(ctx, loc)
}

// AbortUploads is the store's AbortUploads; a store without it aborts
// nothing.
func (l *LazyStore) AbortUploads(ctx context.Context, prefix string, before time.Time, dryRun bool) ([]string, int, error) {
	st, err := l.get()
	if err != nil {
		return nil, 0, err
	}
	a, ok := st.(interface {
		AbortUploads(ctx context.Context, prefix string, before time.Time, dryRun bool) ([]string, int, error)
	})
	if !ok {
		return nil, 0, nil
	}
	return a.AbortUploads(ctx, prefix, before, dryRun)
}

// Walk is the store's Walk.
func (l *LazyStore) Walk(ctx context.Context, prefix string, fn func(loc string, modified time.Time) error) (time.Time, error) {
	st, err := l.get()
	if err != nil {
		return time.Time{}, err
	}
	return st.Walk(ctx, prefix, fn)
}
