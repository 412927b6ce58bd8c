package catalog

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// commitFault is a loopback proxy in front of a PostgreSQL server that,
// once armed, answers the next COMMIT of a transaction that wrote rows
// with an error after the server has committed it: what a client sees
// when the server shuts down between making a commit durable and
// answering (FATAL 57P01), or when a store misreports a commit that
// landed (an ERROR). It speaks the wire protocol's framing only: client
// bytes pass through untouched; server messages are read one by one.
type commitFault struct {
	ln    net.Listener
	fatal bool        // FATAL and close, or ERROR and go on
	armed atomic.Bool // the next write's COMMIT is answered with the fault
	fired atomic.Int32
	wg    sync.WaitGroup
}

func newCommitFault(t *testing.T, upstream string, fatal bool) (*commitFault, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("sslmode") != "disable" {
		t.Skipf("the proxy reads the protocol in the clear; %s does not disable TLS", u.Redacted())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitFault{ln: ln, fatal: fatal}
	target := u.Host
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c, target) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *commitFault) serve(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		io.Copy(server, client)
		server.Close()
	}()
	in := bufio.NewReader(server)
	wrote := false // the transaction under way changed rows
	for {
		var head [5]byte
		if _, err := io.ReadFull(in, head[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(head[1:])-4)
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		if head[0] == 'C' {
			tag := strings.TrimRight(string(body), "\x00")
			switch {
			case strings.HasPrefix(tag, "INSERT"), strings.HasPrefix(tag, "DELETE"), strings.HasPrefix(tag, "UPDATE"):
				wrote = true
			case tag == "COMMIT" && wrote && p.armed.CompareAndSwap(true, false):
				p.fired.Add(1)
				if p.fatal {
					client.Write(errorResponse("FATAL", "57P01", "terminating connection due to administrator command"))
					return
				}
				client.Write(errorResponse("ERROR", "40001", "could not serialize access due to concurrent update"))
				wrote = false
				continue
			}
		}
		if head[0] == 'Z' && len(body) == 1 && body[0] == 'I' {
			wrote = false // out of any transaction
		}
		if _, err := client.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}

func errorResponse(severity, code, msg string) []byte {
	var body []byte
	for _, f := range []struct {
		t byte
		v string
	}{{'S', severity}, {'V', severity}, {'C', code}, {'M', msg}} {
		body = append(append(append(body, f.t), f.v...), 0)
	}
	body = append(body, 0)
	out := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(len(body)+4))
	return append(out, body...)
}

// TestCommitThatLandedIsNotRepeated: a commit the server made durable but
// answered with an error is found and reported as committed, once, and
// never committed again on top of itself. With FATAL (a server shut down
// immediately) the store must say the outcome is unknown, not that
// nothing was written; with an ERROR for a commit that landed (a store
// that misreports) the catalog must still look for its own commit before
// it takes its fence, taken by itself, for another writer's. Both a
// table's creation and an append are tried: an append repeated would
// double the table's rows.
func TestCommitThatLandedIsNotRepeated(t *testing.T) {
	for _, mode := range []struct {
		name  string
		fatal bool
	}{{"FATAL 57P01", true}, {"ERROR 40001", false}} {
		t.Run(mode.name, func(t *testing.T) {
			p, proxied := newCommitFault(t, pgtest.URL(t), mode.fatal)
			c, err := Create(proxied, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before, err := c.Snapshots()
			if err != nil {
				t.Fatal(err)
			}

			p.armed.Store(true)
			created := commit(t, c, func(tx *Txn) {
				tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}})
			})
			p.armed.Store(true)
			added := commit(t, c, func(tx *Txn) {
				tx.AddFiles("t", NewFile{Path: "/d/a.parquet", RecordCount: 7, RowGroupCount: 1})
			})
			if n := p.fired.Load(); n != 2 {
				t.Fatalf("the fault fired %d times, want 2 (one per commit)", n)
			}

			after, err := c.Snapshots()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(after)-len(before), 2; got != want {
				t.Fatalf("%d snapshots committed, want %d: %+v", got, want, after[len(before):])
			}
			if after[len(after)-2].ID != created.ID || after[len(after)-1].ID != added.ID {
				t.Fatalf("commits reported snapshots %d and %d, the catalog holds %+v", created.ID, added.ID, after[len(before):])
			}
			r, err := c.Read(Latest)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tbl, err := r.Table("t")
			if err != nil {
				t.Fatal(err)
			}
			files, err := r.Files(tbl.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 1 {
				t.Fatalf("the table holds %d files after one append, want 1: %+v", len(files), files)
			}
		})
	}
}
