package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ErrUnreachable reports an object store that cannot be reached at all:
// its name does not resolve, nothing listens at its address, or connecting
// times out. It is a failure of the store, not of any object: see
// UnreachableError.
var ErrUnreachable = errors.New("object store unreachable")

// UnreachableError is the one failure every request to an unreachable
// endpoint shares. The SDK's retryer would otherwise try each request on
// its own (a query over 2,000 objects made 12,000 attempts and printed a
// line for each); instead the requests to one endpoint spend one retry
// budget (see reach), and callers that fan out over many objects stop at
// the first such error and report it once (ForEach, NotReached).
type UnreachableError struct {
	// Endpoint is scheme://host[:port]: never credentials, paths or keys.
	Endpoint string
	// Attempts is how many connections were tried and failed, in all.
	Attempts int
	// For is from the start of the first failed attempt to giving up.
	For time.Duration
	// Last is the last attempt's failure (a dial error, which names the
	// address only).
	Last error
	// NotReached counts the objects left unread because of it, when a
	// caller counted them (0: not counted).
	NotReached int

	retry bool // the budget is not spent yet: the SDK may try again
}

func (e *UnreachableError) Error() string {
	attempts := fmt.Sprintf("%d attempts", e.Attempts)
	if e.Attempts == 1 {
		attempts = "1 attempt"
	}
	msg := fmt.Sprintf("object store %s is unreachable (%v; gave up after %s in %s)", e.Endpoint, e.Last, attempts, e.For.Round(time.Millisecond))
	if e.retry {
		msg = fmt.Sprintf("object store %s: %v", e.Endpoint, e.Last)
	}
	if e.NotReached > 0 {
		msg += fmt.Sprintf(": %d objects not reached", e.NotReached)
	}
	return msg
}

// Is makes errors.Is(err, ErrUnreachable) hold, once the budget is spent.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable && !e.retry }

func (e *UnreachableError) Unwrap() error { return e.Last }

// RetryableError is what the SDK's retryer asks (retry.RetryableError):
// an attempt within the budget is tried again, at once, since reach
// paces the attempts itself; a spent budget is final.
func (e *UnreachableError) RetryableError() bool { return e.retry }

// NotReached is err's UnreachableError counting n objects not reached, or
// nil when err holds none.
func NotReached(err error, n int) error {
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.retry {
		return nil
	}
	c := *ue
	c.NotReached = n
	return &c
}

// unreachable reports whether err is a failure to connect at all: a
// dial that was refused, timed out or could not resolve the name (also
// through an HTTP proxy). Anything after a connection is made — a reset,
// a timeout waiting for the answer, a TLS failure — is the server's
// answer, retried per request as before.
func unreachable(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return false // out of descriptors here: not the store's failure
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// dialError is the dial error within err without the request's URL (which
// *url.Error adds, and which names the object).
func dialError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// reach gates the requests to each endpoint (scheme and host) of one
// store. While an endpoint answers, requests pass untouched. Once a
// connection to it fails, the endpoint is suspect: requests wait, and one
// at a time probes it, each probe after a growing pause (up to
// MaxBackoff). Any answer makes it healthy again and the waiting requests
// go on. After MaxAttempts failed probes, or DownAfter from the first
// failed attempt, it is down: every waiting request, and every request
// made in the next coolDown, fails at once with the same
// UnreachableError, and attempts still connecting are cancelled. After
// coolDown one request probes again, once, while the others go on
// failing at once. So a store that is down costs
// about one request's retry budget, however many requests were in flight.
type reach struct {
	maxAttempts int
	maxBackoff  time.Duration
	downAfter   time.Duration
	coolDown    time.Duration

	mu  sync.Mutex
	eps map[string]*endpoint
}

type epState int

const (
	epUp epState = iota
	epSuspect
	epDown
)

type endpoint struct {
	name      string
	state     epState
	episode   int       // counts suspect episodes, so a stale deadline is ignored
	failures  int       // probes failed in this episode (the budget spent)
	attempts  int       // every attempt failed in this episode
	first     time.Time // when this episode's first failed attempt started
	probing   bool      // a probe is in flight
	nextProbe time.Time
	downUntil time.Time
	last      error
	deadline  *time.Timer
	changed   chan struct{}         // closed, and replaced, at every change of state
	pending   map[*attempt]struct{} // attempts not yet connected
}

type attempt struct {
	cancel    context.CancelFunc
	connected atomic.Bool
	cut       atomic.Bool // cancelled because the endpoint went down
}

func newReach(o S3Options) *reach {
	return &reach{maxAttempts: o.MaxAttempts, maxBackoff: o.MaxBackoff, downAfter: o.DownAfter,
		coolDown: max(time.Second, o.MaxBackoff), eps: map[string]*endpoint{}}
}

func (g *reach) endpoint(u *url.URL) *endpoint {
	// The host only: userinfo (never used by the SDK, but possible in a
	// configured endpoint) and paths stay out of names and errors.
	name := u.Scheme + "://" + u.Host
	g.mu.Lock()
	defer g.mu.Unlock()
	ep := g.eps[name]
	if ep == nil {
		ep = &endpoint{name: name, changed: make(chan struct{}), pending: map[*attempt]struct{}{}}
		g.eps[name] = ep
	}
	return ep
}

// pause is the wait after the n-th failed probe: exponential from 100 ms
// (the SDK's own caps for a request's retries), capped at MaxBackoff, with
// half of it jittered so that processes sharing a store do not probe in
// step. The default budget of 6 attempts is then spent in 1.6 to 3.1 s.
func (g *reach) pause(n int) time.Duration {
	d := min(g.maxBackoff, 100*time.Millisecond<<min(n-1, 16))
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// broadcast wakes every waiter. Callers hold g.mu.
func (ep *endpoint) broadcast() {
	close(ep.changed)
	ep.changed = make(chan struct{})
}

// up is an answer from the endpoint. Callers hold g.mu.
func (ep *endpoint) up() {
	if ep.state == epUp {
		return
	}
	if ep.deadline != nil {
		ep.deadline.Stop()
		ep.deadline = nil
	}
	ep.state, ep.failures, ep.attempts, ep.probing = epUp, 0, 0, false
	ep.broadcast()
}

// down spends the budget. Callers hold g.mu.
func (g *reach) down(ep *endpoint, now time.Time) {
	if ep.deadline != nil {
		ep.deadline.Stop()
		ep.deadline = nil
	}
	ep.state, ep.probing, ep.downUntil = epDown, false, now.Add(g.coolDown)
	for a := range ep.pending {
		if !a.connected.Load() {
			a.cut.Store(true)
			a.cancel()
			ep.attempts++
		}
	}
	ep.broadcast()
}

func (ep *endpoint) err(now time.Time, retry bool) *UnreachableError {
	return &UnreachableError{Endpoint: ep.name, Attempts: ep.attempts, For: now.Sub(ep.first), Last: ep.last, retry: retry}
}

// do sends r through the gate (see reach).
func (g *reach) do(r *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	ep := g.endpoint(r.URL)
	ctx := r.Context()
	for {
		g.mu.Lock()
		now := time.Now()
		probe := false
		switch ep.state {
		case epDown:
			// While another request probes after the cool-down, too: a
			// probe that has to time out would hold every request up.
			if now.Before(ep.downUntil) || ep.probing {
				err := ep.err(ep.downUntil.Add(-g.coolDown), false)
				g.mu.Unlock()
				return nil, err
			}
			probe = true
		case epSuspect:
			if !now.Before(ep.first.Add(g.downAfter)) {
				g.down(ep, now)
				continue
			}
			if !ep.probing && !now.Before(ep.nextProbe) {
				probe = true
			}
		}
		if ep.state != epUp && !probe {
			// Another request probes, or the pause before the next probe
			// runs: wait for news, the next probe's time or the deadline.
			ch := ep.changed
			wake := ep.first.Add(g.downAfter)
			if !ep.probing && ep.state == epSuspect && ep.nextProbe.Before(wake) {
				wake = ep.nextProbe
			}
			g.mu.Unlock()
			t := time.NewTimer(time.Until(wake))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-ch:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if probe {
			ep.probing = true
		}
		actx, cancel := context.WithCancel(ctx)
		a := &attempt{cancel: cancel}
		actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { a.connected.Store(true) }})
		ep.pending[a] = struct{}{}
		g.mu.Unlock()

		start := time.Now()
		resp, err := send(r.WithContext(actx))

		g.mu.Lock()
		delete(ep.pending, a)
		now = time.Now()
		if probe {
			ep.probing = false
		}
		switch {
		case err == nil:
			ep.up()
			g.mu.Unlock()
			// The attempt's context lives as long as its body.
			resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		case a.cut.Load():
			cancel()
			e := ep.err(ep.downUntil.Add(-g.coolDown), false)
			g.mu.Unlock()
			return nil, e
		case ctx.Err() != nil || !unreachable(err):
			cancel()
			switch {
			case ctx.Err() == nil && probe:
				// Connected, then failed: the endpoint answers, and
				// the request's own retries take over.
				ep.up()
			case probe:
				ep.broadcast() // inconclusive: let another request probe
			}
			// A connection made before the episode began and broken
			// now says nothing of the endpoint now.
			g.mu.Unlock()
			return nil, err
		}
		cancel()
		ep.attempts++
		ep.last = dialError(err)
		switch {
		case ep.state == epUp:
			ep.state, ep.first, ep.failures = epSuspect, start, 1
			ep.attempts = 1
			ep.episode++
			episode := ep.episode
			ep.deadline = time.AfterFunc(time.Until(start.Add(g.downAfter)), func() {
				g.mu.Lock()
				defer g.mu.Unlock()
				if ep.state == epSuspect && ep.episode == episode {
					g.down(ep, time.Now())
				}
			})
		case probe && ep.state == epDown:
			// The one probe after a cool-down.
			ep.downUntil = now.Add(g.coolDown)
			e := ep.err(now, false)
			ep.broadcast()
			g.mu.Unlock()
			return nil, e
		case probe:
			ep.failures++
		}
		if ep.state == epSuspect && (ep.failures >= g.maxAttempts || !now.Before(ep.first.Add(g.downAfter))) {
			g.down(ep, now)
		}
		if ep.state == epDown {
			e := ep.err(now, false)
			g.mu.Unlock()
			return nil, e
		}
		if probe {
			ep.nextProbe = now.Add(g.pause(ep.failures))
		}
		ep.broadcast()
		e := ep.err(now, true)
		g.mu.Unlock()
		return nil, e
	}
}

// cancelBody ends an attempt's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// reachClient is the HTTP client with the gate in front.
type reachClient struct {
	inner aws.HTTPClient
	g     *reach
}

func (c *reachClient) Do(r *http.Request) (*http.Response, error) { return c.g.do(r, c.inner.Do) }

// reachRetryer leaves the pacing of attempts at an unreachable endpoint to
// reach: the SDK tries such a request again at once, and the request then
// waits its turn in the gate.
type reachRetryer struct{ aws.RetryerV2 }

func (r reachRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	var ue *UnreachableError
	if errors.As(err, &ue) && ue.retry {
		return 0, nil
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}
