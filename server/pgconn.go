package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// connReader is the connection as the protocol reads it.
//
// It hands the protocol a message only once the whole message has
// arrived. pgproto3 makes room for a message's body as soon as it reads
// the header, so a header claiming a large body and nothing after it
// would make the server hold that much per connection; here what a client
// makes the server hold is what it has sent. A header over the limit (or
// malformed) is handed on at once, for pgproto3 to refuse. The startup
// exchange, whose messages pgproto3 bounds itself, is read as it comes.
//
// And it has a watch: while a statement runs nothing reads the socket, so
// a client that went away would go unnoticed until its answer is written,
// and DuckDB would run its query to the end. The watch reads meanwhile,
// keeps what the client sent (pipelined messages, up to watchLimit) for
// the protocol, and reports a closed connection.
type connReader struct {
	c   net.Conn
	buf []byte // buf[off:] is received and not yet handed on
	off int
	// whole is how many bytes of buf[off:] are whole messages.
	whole int
	// framed: past the startup exchange. max is the body limit the
	// protocol applies. raw: a header was over it or malformed, and
	// everything is handed on as it comes.
	framed, raw bool
	max         int
	h           *hold // the connection's share of the server's buffers
}

// watchLimit is how much the watch keeps of what a client sends while its
// statement runs; past it the rest waits in the socket.
const watchLimit = 64 << 10

func (r *connReader) Read(p []byte) (int, error) {
	for {
		if n := r.ready(); n > 0 {
			n = copy(p, r.buf[r.off:r.off+n])
			r.off += n
			r.whole = max(0, r.whole-n)
			if r.off == len(r.buf) {
				r.off, r.whole = 0, 0
				if cap(r.buf) > 64<<10 {
					r.buf = nil // a large message passed: do not keep its room
				} else {
					r.buf = r.buf[:0]
				}
			}
			r.count()
			return n, nil
		}
		if err := r.fill(true); err != nil {
			return 0, err
		}
	}
}

// ready is how many buffered bytes may be handed on.
func (r *connReader) ready() int {
	pending := r.buf[r.off:]
	if !r.framed || r.raw {
		return len(pending)
	}
	for len(pending)-r.whole >= 5 {
		n := int(int32(binary.BigEndian.Uint32(pending[r.whole+1:])))
		if n < 4 || n-4 > r.max {
			r.raw = true
			return len(pending)
		}
		if len(pending)-r.whole < 1+n {
			break
		}
		r.whole += 1 + n
	}
	return r.whole
}

// fill reads what the socket has, growing the buffer by what arrives.
// The room for the read is taken from the budget before the read, since
// what is read cannot be given back: within the connection's floor, and
// past it from the pool if pool says so. With no room at all it reads
// nothing and returns a *noBufferError.
func (r *connReader) fill(pool bool) error {
	if r.off > 0 {
		n := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:n], 0
	}
	room := r.reserve(pool)
	if room == 0 {
		return &noBufferError{claim: r.claim()}
	}
	r.buf = slices.Grow(r.buf, room)
	n, err := r.c.Read(r.buf[len(r.buf) : len(r.buf)+room])
	r.buf = r.buf[:len(r.buf)+n]
	r.count()
	if n > 0 {
		return nil
	}
	return err
}

// reserve takes room for a read: a whole readRoom if it can, else what
// is left of the floor.
func (r *connReader) reserve(pool bool) int {
	h, held := r.h, int64(len(r.buf)-r.off)
	if (pool || h.fits(readRoom)) && h.set(held, h.write, readRoom) {
		return readRoom
	}
	if free := h.floor - held - h.write; free > 0 {
		h.set(held, h.write, free)
		return int(free)
	}
	return 0
}

// claim is the size of the message being received, as its header says
// (0 before a header has arrived).
func (r *connReader) claim() int64 {
	pending := r.buf[r.off:]
	if !r.framed || len(pending)-r.whole < 5 {
		return 0
	}
	return 1 + int64(binary.BigEndian.Uint32(pending[r.whole+1:]))
}

// count keeps the connection's share of the buffers up to date with what
// the reader holds (its room given back: the read is done).
func (r *connReader) count() {
	r.h.set(int64(len(r.buf)-r.off), r.h.write, 0)
}

// release gives back what the reader still holds, when it is replaced.
func (r *connReader) release() {
	r.buf, r.off, r.whole = nil, 0, 0
	r.count()
}

// noBufferError is a read the server's buffers had no room for.
type noBufferError struct{ claim int64 }

func (e *noBufferError) Error() string {
	return "no room left in the server's buffers for the client's message"
}

// limit sets the body limit, for the reader and the protocol alike.
func (r *connReader) limit(be *pgproto3.Backend, n int) {
	r.framed, r.max = true, n
	be.SetMaxBodyLen(n)
}

// watch calls gone if the client closes the connection before stop is
// called; stop returns once the watch has ended.
func (r *connReader) watch(gone func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(r.buf)-r.off < watchLimit {
			// Within the floor only: what a client sends ahead may wait in
			// the socket, and must not take what other sessions need.
			if err := r.fill(false); err != nil {
				var ne net.Error
				var nb *noBufferError
				if !errors.As(err, &nb) && (!errors.As(err, &ne) || !ne.Timeout()) {
					gone()
				}
				return
			}
		}
	}()
	return func() {
		r.c.SetReadDeadline(time.Now())
		<-done
		r.c.SetReadDeadline(time.Time{})
	}
}

// connWriter writes to the connection with a deadline on each piece: a
// client that takes nothing for the write timeout is gone for the
// server's purposes, however long it keeps its socket open. Pieces keep
// a slow reader that does take the answer alive; a deadline over a whole
// flush would drop it.
type connWriter struct {
	c       net.Conn
	timeout time.Duration
	// err is the first write error: after it nothing is written (a new
	// deadline would only make a gone client hold the session longer).
	err      error
	timedOut bool
	// mu orders a cancel request's deadline with the one each piece sets:
	// a piece begun after the cancel must not put the whole write timeout
	// back.
	mu sync.Mutex
	// hurry: a cancel request came while the session was answering, and
	// until its next message each piece must be taken within cancelGrace.
	// cut: the write failed so.
	hurry, cut bool
}

const writePiece = 64 << 10

// cancelGrace is how long, after a cancel request, a client has to take
// each piece of what it is sent. One that reads takes a piece in far less
// and gets the cancel's 57014 as PostgreSQL's clients expect; one that
// does not read would otherwise keep the session, its rows in DuckDB and
// its share of the buffers until the write timeout. Its session ends: a
// write cut mid-message leaves nothing an error could follow.
const cancelGrace = time.Second

func (w *connWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	done := 0
	for done < len(p) {
		end := min(len(p), done+writePiece)
		w.mu.Lock()
		d := w.timeout
		if w.hurry {
			d = min(d, cancelGrace)
		}
		w.c.SetWriteDeadline(time.Now().Add(d))
		w.mu.Unlock()
		n, err := w.c.Write(p[done:end])
		done += n
		if err != nil {
			w.mu.Lock()
			w.err, w.cut = err, w.hurry
			w.mu.Unlock()
			return done, err
		}
	}
	return done, nil
}

// cancel shortens the deadline of a write under way, and of those after
// it, to cancelGrace (from the first cancel: more do not extend it).
func (w *connWriter) cancel() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.hurry {
		w.hurry = true
		w.c.SetWriteDeadline(time.Now().Add(min(w.timeout, cancelGrace)))
	}
}

// calm ends a cancel's hurry, at the session's next message.
func (w *connWriter) calm() {
	w.mu.Lock()
	w.hurry = false
	w.mu.Unlock()
}

// lingerTimeout bounds how long a refused client is read from before its
// connection closes.
const lingerTimeout = 2 * time.Second

// lingerClose closes a connection whose client may still be sending (a
// driver writing the message it was refused for): closing with its bytes
// unread would reset the connection, and the reset can overtake the error
// sent just before it. What it sends meanwhile is read into nothing.
func lingerClose(c net.Conn, upTo int64) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, upTo)
	c.Close()
}
