package pgkv

import (
	"context"
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// A walk reads ahead only once the caller has walked a whole page: a
// short scan (a seek that looks at one key, a "has any row" check) must
// not send a second query it never uses, which a Get on the same
// snapshot would then wait behind. Past the first page, the next is read
// while the caller walks the current one, in either direction.
func TestReadAheadStartsAtTheSecondPage(t *testing.T) {
	ctx := context.Background()
	s, err := Init(ctx, pgtest.URL(t), Options{RetryFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	const n = 5 * pageMin * 4 // past the first two pages in both directions
	for i := range n {
		if err := b.Set(fmt.Appendf(nil, "k%05d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.newSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	for _, forward := range []bool{true, false} {
		kit, err := sn.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		it := kit.(*iter)
		start, step := it.First, it.Next
		if !forward {
			start, step = it.Last, it.Prev
		}
		if !start() {
			t.Fatalf("forward=%v: no first row: %v", forward, it.Error())
		}
		if it.ahead != nil {
			t.Errorf("forward=%v: the first page of a walk read ahead", forward)
		}
		if _, err := sn.Get([]byte("k00000")); err != nil {
			t.Fatal(err)
		}
		rows := 1
		for rows <= pageMin && step() {
			rows++
		}
		if it.ahead == nil {
			t.Errorf("forward=%v: the second page (row %d) did not read ahead", forward, rows)
		}
		for step() {
			rows++
		}
		if err := it.Error(); err != nil || rows != n {
			t.Fatalf("forward=%v: walked %d rows of %d: %v", forward, rows, n, err)
		}
		// A turn of direction is the first page of a new walk.
		if forward {
			it.First()
			for range pageMin + 1 {
				it.Next()
			}
			if it.ahead == nil {
				t.Fatalf("the second page of a walk did not read ahead")
			}
			if !it.Prev() || it.ahead != nil {
				t.Errorf("a turn of direction read ahead on its first page (valid %v)", it.Valid())
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
