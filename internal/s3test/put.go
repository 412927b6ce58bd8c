package s3test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

var clients sync.Map // *Server → *s3.Client

// Client is an SDK client of the server, configured from the server's own
// fields (never the environment), for tests that put and delete objects.
func (s *Server) Client() *s3.Client {
	if c, ok := clients.Load(s); ok {
		return c.(*s3.Client)
	}
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
	clients.Store(s, c)
	return c
}

func split(tb testing.TB, loc string) (string, string) {
	tb.Helper()
	bucket, key, ok := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	if !ok || !strings.HasPrefix(loc, "s3://") {
		tb.Fatalf("s3test: %q is not s3://bucket/key", loc)
	}
	return bucket, key
}

// Put writes an object (s3://bucket/key).
func (s *Server) Put(tb testing.TB, loc string, data []byte) {
	tb.Helper()
	bucket, key := split(tb, loc)
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		tb.Fatalf("s3test: put %s: %v", loc, err)
	}
}

// Keys lists the keys of bucket under prefix (up to 1,000).
func (s *Server) Keys(tb testing.TB, bucket, prefix string) []string {
	tb.Helper()
	out, err := s.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		tb.Fatalf("s3test: list %s/%s: %v", bucket, prefix, err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	return keys
}

// Delete removes an object.
func (s *Server) Delete(tb testing.TB, loc string) {
	tb.Helper()
	bucket, key := split(tb, loc)
	if _, err := s.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
		tb.Fatalf("s3test: delete %s: %v", loc, err)
	}
}
