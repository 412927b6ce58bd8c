package s3test

import (
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
	srv := &http.Server{Handler: handler, ErrorLog: nil}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
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
