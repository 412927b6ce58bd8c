package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// S3Options configure an S3 store. The zero value of each field is its
// default; S3OptionsFromEnv fills them the way other S3 tools are
// configured.
type S3Options struct {
	// Endpoint is the server's URL (an S3-compatible server, or a region's
	// endpoint); "" lets the SDK choose AWS's endpoint for the region.
	Endpoint string
	// Region signs requests; "" means us-east-1, which S3-compatible
	// servers accept by default.
	Region string
	// PathStyle addresses objects as ENDPOINT/bucket/key instead of
	// bucket.ENDPOINT/key: what most S3-compatible servers on an IP
	// address or a single host name need.
	PathStyle bool
	// MaxAttempts bounds the tries of one request (default 6): throttling
	// (503 SlowDown), 5xx answers, timeouts and dropped connections are
	// tried again after an exponential backoff with full jitter. An
	// endpoint that cannot be connected to is tried MaxAttempts times in
	// all, by whichever requests are waiting for it (see DownAfter).
	MaxAttempts int
	// MaxBackoff caps one wait between attempts (default 2 s).
	MaxBackoff time.Duration
	// ResponseTimeout is how long one attempt waits for the response
	// headers (default 30 s) before it counts as failed and is retried.
	ResponseTimeout time.Duration
	// DownAfter bounds how long an endpoint that cannot be connected to
	// (its name does not resolve, the connection is refused or times out)
	// is tried before every request to it fails with one
	// UnreachableError: default (MaxAttempts−1)×MaxBackoff, 10 s. The
	// requests in flight share that budget instead of each spending
	// MaxAttempts of their own; a connection attempt times out after
	// 10 s, or DownAfter when shorter.
	DownAfter time.Duration
	// Connections bounds the connections to the server (default 64):
	// each request waits out a round trip, so at 15 ms one connection
	// makes about 66 requests a second, and registering many small
	// objects is bounded by the connections, not by CPU.
	Connections int
}

// S3OptionsFromEnv reads AWS_ENDPOINT_URL_S3 (else AWS_ENDPOINT_URL),
// AWS_REGION (else AWS_DEFAULT_REGION), AWS_S3_FORCE_PATH_STYLE (true or
// 1), AWS_MAX_ATTEMPTS and ROCKLAKE_S3_CONNECTIONS (a positive number;
// anything else is ignored, leaving the default). Credentials are not read here: the SDK's default chain finds them
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, a profile) and they
// never leave it.
func S3OptionsFromEnv() S3Options {
	o := S3Options{Endpoint: firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), Region: firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")}
	switch strings.ToLower(os.Getenv("AWS_S3_FORCE_PATH_STYLE")) {
	case "1", "true", "yes", "on":
		o.PathStyle = true
	}
	// The SDK's own variable; read here because the retryer is rocklake's.
	if n, err := strconv.Atoi(os.Getenv("AWS_MAX_ATTEMPTS")); err == nil && n > 0 {
		o.MaxAttempts = n
	}
	if n, err := strconv.Atoi(os.Getenv("ROCKLAKE_S3_CONNECTIONS")); err == nil && n > 0 {
		o.Connections = n
	}
	return o
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func (o S3Options) withDefaults() S3Options {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 2 * time.Second
	}
	if o.ResponseTimeout <= 0 {
		o.ResponseTimeout = 30 * time.Second
	}
	if o.Connections <= 0 {
		o.Connections = 64
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Duration(o.MaxAttempts-1) * o.MaxBackoff
		if o.DownAfter <= 0 {
			o.DownAfter = o.MaxBackoff
		}
	}
	return o
}

// S3 is an S3-compatible object store. It is safe for concurrent use.
type S3 struct {
	client *s3.Client
	opts   S3Options
	counts counters
}

type counters struct{ requests, bytes atomic.Int64 }

// Connections is how many requests the store keeps in flight at most:
// work that is only requests (reading many footers) runs that many at once.
func (s *S3) Connections() int { return s.opts.Connections }

// NewS3 makes a store from options. It makes no request.
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	opts = opts.withDefaults()
	s := &S3{opts: opts}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(opts.Region),
		config.WithRetryer(func() aws.Retryer {
			return reachRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = opts.MaxBackoff
				// A bulk registration meets throttling on many requests at
				// once; the SDK's shared retry budget would then fail
				// requests that have attempts left.
				o.RateLimiter = ratelimit.None
				// A connection dropped before the response headers
				// surfaces as EOF, which the SDK does not classify.
				o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
					if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
						return aws.TrueTernary
					}
					return aws.UnknownTernary
				}))
			})}
		}))
	if err != nil {
		return nil, fmt.Errorf("S3 configuration: %w", err)
	}
	// The SDK's own client already carries what the environment asks of
	// it (AWS_CA_BUNDLE, proxies); it gets bounded connections and a header
	// timeout, and is wrapped to count.
	bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		bc = awshttp.NewBuildableClient()
	}
	bc = bc.WithDialerOptions(func(d *net.Dialer) { d.Timeout = min(10*time.Second, opts.DownAfter) }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = opts.Connections
			tr.MaxIdleConnsPerHost = opts.Connections
			tr.MaxConnsPerHost = opts.Connections
			tr.ResponseHeaderTimeout = opts.ResponseTimeout
		})
	// The gate is outside the count: a request it fails at once, while
	// the endpoint is down, is no attempt.
	cfg.HTTPClient = &reachClient{inner: &countingClient{inner: bc, c: &s.counts}, g: newReach(opts)}
	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
		// Objects are checked by ETag and size; a whole-object checksum
		// cannot cover a ranged read anyway, and the SDK would log about
		// every response without one.
		o.DisableLogOutputChecksumValidationSkipped = true
		o.Logger = logging.Nop{}
	})
	return s, nil
}

// Counts are the requests made and bytes received so far.
func (s *S3) Counts() Counts {
	return Counts{Requests: s.counts.requests.Load(), Bytes: s.counts.bytes.Load()}
}

// Client is the SDK client, for tools and tests that write objects.
func (s *S3) Client() *s3.Client { return s.client }

// countingClient counts every attempt and every body byte received, at
// the one place all of them pass.
type countingClient struct {
	inner aws.HTTPClient
	c     *counters
}

func (t *countingClient) Do(r *http.Request) (*http.Response, error) {
	t.c.requests.Add(1)
	resp, err := t.inner.Do(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, c: t.c}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	c *counters
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.bytes.Add(int64(n))
	return n, err
}

func (s *S3) Stat(ctx context.Context, loc string) (Object, error) {
	bucket, key, err := ParseS3(loc)
	if err != nil {
		return Object{}, err
	}
	if key == "" || hasGlob(key) {
		return Object{}, fmt.Errorf("%s: %w: not a single object", loc, ErrBadLocation)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return Object{}, s.fail(loc, "HEAD", "", err)
	}
	return Object{Location: loc, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag), Modified: aws.ToTime(out.LastModified)}, nil
}

func (s *S3) List(ctx context.Context, pattern string) ([]Object, error) {
	bucket, key, err := ParseS3(pattern)
	if err != nil {
		return nil, err
	}
	var out []Object
	switch {
	case hasGlob(key):
		if _, err := path.Match(key, ""); err != nil {
			return nil, fmt.Errorf("%s: %w", pattern, err)
		}
		all, err := s.listPrefix(ctx, bucket, key[:strings.IndexAny(key, "*?[")])
		if err != nil {
			return nil, err
		}
		for _, o := range all {
			k := strings.TrimPrefix(o.Location, S3Scheme+bucket+"/")
			if ok, _ := path.Match(key, k); ok && !strings.HasSuffix(k, "/") {
				out = append(out, o)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: no object matches", pattern)
		}
	case key == "" || strings.HasSuffix(key, "/"):
		if out, err = s.parquetBelow(ctx, bucket, key); err != nil {
			return nil, err
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: holds no .parquet objects", pattern)
		}
	default:
		o, err := s.Stat(ctx, pattern)
		if err == nil {
			return []Object{o}, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		// Named without its "/", as a directory is on the command line.
		if out, err = s.parquetBelow(ctx, bucket, key+"/"); err != nil {
			return nil, err
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: %w", pattern, ErrNotFound)
		}
	}
	for _, o := range out {
		if _, _, err := ParseS3(o.Location); err != nil {
			return nil, fmt.Errorf("%s: matches an object rocklake cannot register: %w", pattern, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out, nil
}

func (s *S3) parquetBelow(ctx context.Context, bucket, prefix string) ([]Object, error) {
	all, err := s.listPrefix(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, o := range all {
		if isParquet(o.Location) {
			out = append(out, o)
		}
	}
	return out, nil
}

// listPrefix lists every object whose key starts with prefix: one request
// per 1,000 keys.
func (s *S3) listPrefix(ctx context.Context, bucket, prefix string) ([]Object, error) {
	where := S3Scheme + bucket + "/" + prefix
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.fail(where, "LIST", "", err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			out = append(out, Object{Location: S3Scheme + bucket + "/" + k, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

func (s *S3) ReadRange(ctx context.Context, obj Object, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > obj.Size {
		return nil, fmt.Errorf("%s: bytes %d..%d are beyond its %d bytes", obj.Location, off, off+n, obj.Size)
	}
	buf := make([]byte, n)
	if n == 0 {
		return buf, nil
	}
	w := &sliceWriter{buf: buf}
	if err := s.get(ctx, obj, off, n, w); err != nil {
		return nil, err
	}
	return buf, nil
}

type sliceWriter struct {
	buf []byte
	n   int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > len(w.buf) {
		return 0, errors.New("more bytes than asked for")
	}
	w.n += copy(w.buf[w.n:], p)
	return len(p), nil
}

func (s *S3) Fetch(ctx context.Context, obj Object, w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	if obj.Size == 0 {
		return 0, nil
	}
	err := s.get(ctx, obj, 0, obj.Size, cw)
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// get writes bytes [off, off+n) of obj to w. Every request carries
// If-Match with the object's ETag, so a changed object answers 412 rather
// than other bytes; the answer's ETag and total size are checked too, for
// servers that ignore If-Match. The SDK retries a request that fails before
// its body; a body cut off part-way is resumed here from the first byte
// not yet written, with the same backoff.
func (s *S3) get(ctx context.Context, obj Object, off, n int64, w io.Writer) error {
	bucket, key, err := ParseS3(obj.Location)
	if err != nil {
		return err
	}
	done := int64(0)
	for attempt := 1; ; attempt++ {
		in := &s3.GetObjectInput{Bucket: &bucket, Key: &key,
			Range: aws.String(fmt.Sprintf("bytes=%d-%d", off+done, off+n-1))}
		if obj.ETag != "" {
			in.IfMatch = aws.String(obj.ETag)
		}
		out, err := s.client.GetObject(ctx, in)
		if err != nil {
			return s.fail(obj.Location, fmt.Sprintf("GET bytes %d-%d", off+done, off+n-1), obj.ETag, err)
		}
		if err := checkAnswer(obj, out); err != nil {
			out.Body.Close()
			return err
		}
		got, err := io.Copy(w, io.LimitReader(out.Body, n-done))
		out.Body.Close()
		done += got
		if err == nil && done == n {
			return nil
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", obj.Location, ctx.Err())
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("%s: GET bytes %d-%d: the connection broke off %d times, the last after %d of %d bytes: %w",
				obj.Location, off, off+n-1, attempt, done, n, err)
		}
		if err := sleep(ctx, s.backoff(attempt)); err != nil {
			return fmt.Errorf("%s: %w", obj.Location, err)
		}
	}
}

// checkAnswer refuses an answer about another version of the object.
func checkAnswer(obj Object, out *s3.GetObjectOutput) error {
	if obj.ETag != "" && out.ETag != nil && *out.ETag != obj.ETag {
		return fmt.Errorf("%s: %w (ETag %s, registered %s)", obj.Location, ErrChanged, *out.ETag, obj.ETag)
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if total, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil && total != obj.Size {
				return fmt.Errorf("%s: %w (%d bytes, registered %d)", obj.Location, ErrChanged, total, obj.Size)
			}
		}
	}
	return nil
}

// backoff is the wait before attempt+1: exponential, capped, with full
// jitter so that many clients throttled together do not return together.
func (s *S3) backoff(attempt int) time.Duration {
	d := min(s.opts.MaxBackoff, 50*time.Millisecond<<min(attempt, 16))
	return time.Duration(rand.Int64N(int64(d) + 1))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fail turns an SDK error into one that names the object and says what
// happened; the SDK's text (status, request id, attempts) follows. SDK
// errors carry no credentials: requests are signed in headers.
func (s *S3) fail(loc, op, etag string, err error) error {
	var ue *UnreachableError
	if errors.As(err, &ue) {
		// Without the SDK's wrapping, which repeats the request's URL; a
		// request that gave up on its own attempts gave up on the store
		// too.
		c := *ue
		c.retry = false
		return fmt.Errorf("%s: %s: %w", loc, op, &c)
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%s: %w: the bucket does not exist", loc, ErrNotFound)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return fmt.Errorf("%s: %w", loc, ErrNotFound)
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		return fmt.Errorf("%s: %w (its ETag is no longer %s)", loc, ErrChanged, etag)
	case status == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%s: %w (shorter than registered)", loc, ErrChanged)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" || status == http.StatusForbidden:
		return fmt.Errorf("%s: %s refused (%s): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's permissions", loc, op, firstNonEmpty(code, strconv.Itoa(status)))
	}
	return fmt.Errorf("%s: %s: %w", loc, op, err)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
