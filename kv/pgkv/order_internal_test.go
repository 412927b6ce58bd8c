package pgkv

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOrderIsKeysThenWrites: the abbreviated sort of a batch's writes
// (batch.order) gives exactly the order of comparing whole keys bytewise,
// then the order the writes were made, over random batches whose keys
// are built to tie: few byte values (zeros among them, which pad an
// abbreviation), keys that are prefixes of others at every length around
// the 7-byte windows, repeated keys, empty keys and keys long enough to
// need a two-byte length.
func TestOrderIsKeysThenWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte{0x00, 0x01, 0x7f, 0x80, 0xff}
	for round := range 300 {
		bt := &batch{}
		var pool [][]byte
		n := 1 + r.IntN(400)
		for range n {
			var k []byte
			switch {
			case len(pool) > 0 && r.IntN(4) == 0: // the same key again
				k = pool[r.IntN(len(pool))]
			case len(pool) > 0 && r.IntN(3) == 0: // a prefix or an extension of another
				p := pool[r.IntN(len(pool))]
				if r.IntN(2) == 0 {
					k = bytes.Clone(p[:r.IntN(len(p)+1)])
				} else {
					k = append(bytes.Clone(p), alphabet[r.IntN(len(alphabet))])
				}
			default:
				l := r.IntN(30)
				if r.IntN(20) == 0 {
					l = 120 + r.IntN(40)
				}
				k = make([]byte, l)
				for i := range k {
					k[i] = alphabet[r.IntN(len(alphabet))]
				}
			}
			pool = append(pool, k)
			if r.IntN(3) == 0 {
				if err := bt.Delete(k); err != nil {
					t.Fatal(err)
				}
			} else if err := bt.Set(k, []byte{byte(round)}); err != nil {
				t.Fatal(err)
			}
		}
		want := slices.Clone(bt.ops)
		slices.SortStableFunc(want, func(x, y uint64) int {
			kx, _ := bt.at(x)
			ky, _ := bt.at(y)
			return cmp.Or(bytes.Compare(kx, ky), cmp.Compare(x, y))
		})
		slices.Reverse(bt.ops) // order must not depend on the order it is given
		bt.order()
		if !slices.Equal(bt.ops, want) {
			for i := range want {
				if bt.ops[i] != want[i] {
					got, _ := bt.at(bt.ops[i])
					exp, _ := bt.at(want[i])
					t.Fatalf("round %d: write %d of %d: key %x (op %x), want %x (op %x)", round, i, len(want), got, bt.ops[i], exp, want[i])
				}
			}
		}
	}
}
