package catalog

import (
	"fmt"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
)

// A table has one row per name it has had: a rename ends the row of the
// old name and begins one under the new name, both keyed (table id, begin
// snapshot). Only the newest row says whether the table is still there;
// an older row that ended is a rename, not a drop.

// latestTableRows reads the newest row of every table, and deletes through
// del the older rows of a renamed table that no kept snapshot sees (gone).
// Expiry must decide on the newest row: taking an old name's ended row for
// a dropped table would delete a live table with everything in it.
func latestTableRows(r kv.Reader, gone func(end *int64) bool, del func([]byte) error) ([]*catalogpb.Table, error) {
	var out []*catalogpb.Table
	err := scanRange(r, key(tagTable), func(k, v []byte) error {
		p := &catalogpb.Table{}
		if err := decodeValue(v, p); err != nil {
			return fmt.Errorf("table row %x: %w", k, err)
		}
		if n := len(out); n > 0 && out[n-1].Id == p.Id {
			// Keys order a table's rows by begin snapshot: out[n-1] is an
			// older name.
			if prev := out[n-1]; gone(prev.EndSnapshot) {
				if err := del(key(tagTable, prev.Id, prev.BeginSnapshot)); err != nil {
					return err
				}
			}
			out[n-1] = p
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
