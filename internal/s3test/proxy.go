package s3test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what the proxy does with one request.
type Fault int

const (
	Pass        Fault = iota // forward it
	SlowDown                 // answer 503 SlowDown, as S3 throttles
	ServerError              // answer 500 InternalError
	Drop                     // close the connection without an answer
	Truncate                 // forward it, but cut the answer's body off half-way
	Delay                    // wait Proxy.Delay, then forward it
)

// Proxy sits between a client and the server and injects faults.
type Proxy struct {
	Endpoint string        // where clients connect
	Delay    time.Duration // of a Delay fault
	Requests atomic.Int64  // every request it received
	Faults   atomic.Int64  // the requests it did not simply forward
	// StripETags leaves every ETag out of the answers passed on: the
	// header of HEAD, GET and PUT answers and the elements of listings.
	StripETags atomic.Bool

	srv *http.Server
}

// Close stops the proxy: its listener and every connection close, and a
// connection to its address is refused from then on, as by a store that
// is down. The server behind it goes on.
func (p *Proxy) Close() { p.srv.Close() }

var etagElement = regexp.MustCompile(`<ETag>[^<]*</ETag>`)

// stripETags removes the ETags from an answer, its body's included.
func stripETags(resp *http.Response) error {
	resp.Header.Del("ETag")
	if !strings.Contains(resp.Header.Get("Content-Type"), "xml") || resp.Body == nil {
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	b = etagElement.ReplaceAll(b, nil)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// Proxy starts a fault-injecting proxy to the server on a loopback port,
// closed at tb.Cleanup. decide is called for every request (n counts them
// from 1) and may be called from many goroutines.
func (s *Server) Proxy(tb testing.TB, decide func(r *http.Request, n int64) Fault) *Proxy {
	tb.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The client signed the Host it connected to.
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if p.StripETags.Load() {
				if err := stripETags(resp); err != nil {
					return err
				}
			}
			if resp.Request.Header.Get("X-S3test-Truncate") != "" && resp.ContentLength > 1 {
				resp.Body = &cutBody{ReadCloser: resp.Body, left: resp.ContentLength / 2}
			}
			return nil
		},
		ErrorLog: nil,
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.Requests.Add(1)
		f := decide(r, n)
		if f != Pass {
			p.Faults.Add(1)
		}
		switch f {
		case SlowDown:
			s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
			return
		case ServerError:
			s3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
			return
		case Drop:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		case Truncate:
			r.Header.Set("X-S3test-Truncate", "1")
		case Delay:
			time.Sleep(p.Delay)
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.srv = &http.Server{Handler: handler, ErrorLog: nil}
	go p.srv.Serve(l)
	tb.Cleanup(p.Close)
	p.Endpoint = "http://" + l.Addr().String()
	return p
}

// cutBody ends a body early and then fails, as a connection that breaks
// does; the handler then aborts the connection.
type cutBody struct {
	io.ReadCloser
	left int64
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		panic(http.ErrAbortHandler)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>`+msg+`</Message><RequestId>s3test</RequestId></Error>`)
}
