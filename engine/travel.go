package engine

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// travel opens the snapshot a table reference's AT clause names, as
// DuckLake reads it: AT (VERSION => n) is snapshot n, AT (TIMESTAMP => ts)
// the snapshot that was the latest at ts (the last one made at or before
// it). Each reference reads its table at its own snapshot, so that one
// query can compare a table at two of them; the clause must be a constant,
// since it decides what is planned before DuckDB runs anything.
func (e *Engine) travel(tr *duckast.Travel) (*catalog.Reader, error) {
	lit, ok := travelConstant(tr.Expr)
	if !ok {
		return nil, fmt.Errorf("AT (%s => ...) takes a constant here (a snapshot id, or a timestamp as text)", tr.Unit)
	}
	switch strings.ToUpper(tr.Unit) {
	case "VERSION":
		id, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%w: AT (VERSION => %s): a snapshot id is a non-negative integer", catalog.ErrNoSuchSnapshot, lit)
		}
		if base, ok := e.cat.Speculation(); ok && id > base {
			return nil, fmt.Errorf("%w: AT (VERSION => %d): inside a transaction of writes, time travel reads the snapshots up to %d, where it began", catalog.ErrNoSuchSnapshot, id, base)
		}
		return e.cat.Read(id)
	case "TIMESTAMP":
		codec, _ := types.CodecFor(types.MustParseType("timestamptz"))
		v, err := codec.ParseInUTC(lit)
		if err != nil {
			return nil, fmt.Errorf("AT (TIMESTAMP => %s): not a timestamp: %v", lit, err)
		}
		at := time.UnixMicro(v.Int64()) // microseconds since the epoch, UTC
		snaps, err := e.cat.Snapshots()
		if err != nil {
			return nil, err
		}
		if base, ok := e.cat.Speculation(); ok {
			// A transaction's own commits are no snapshots to travel to.
			snaps = slices.DeleteFunc(snaps, func(s catalog.Snapshot) bool { return s.ID > base })
		}
		// Snapshots are listed in commit order, their times not falling.
		i := sort.Search(len(snaps), func(i int) bool { return snaps[i].Time.After(at) })
		if i == 0 {
			return nil, fmt.Errorf("%w: AT (TIMESTAMP => %s): the catalog's first snapshot was made later", catalog.ErrNoSuchSnapshot, lit)
		}
		return e.cat.Read(snaps[i-1].ID)
	}
	return nil, fmt.Errorf("AT (%s => ...): rocklake reads AT (VERSION => n) and AT (TIMESTAMP => ts)", tr.Unit)
}

// travelConstant is an AT clause's value as text: an integer or string
// constant, or a constant cast to a type (TIMESTAMP '2024-01-01').
func travelConstant(x *duckast.Expr) (string, bool) {
	for x != nil && x.Class == "CAST" {
		x = x.Child
	}
	if x == nil || x.Class != "CONSTANT" || x.Value == nil || x.Value.Null {
		return "", false
	}
	switch v := x.Value.Raw.(type) {
	case string:
		return v, true
	case fmt.Stringer: // json.Number
		return v.String(), true
	}
	return "", false
}

// travelSpan is where the AT clause of a table reference is in the query
// text: the first AT keyword after the table's name (ending at end) and
// its alias, past its closing parenthesis, strings and quoted names
// skipped. False when the text there is not an AT clause.
func travelSpan(query string, end int) (from, to int, ok bool) {
	masked := sqllex.Mask(query)
	from = -1
	for i := end; i+2 <= len(masked) && from < 0; i++ {
		if strings.EqualFold(masked[i:i+2], "at") && (i == 0 || !isNameByte(masked[i-1])) &&
			(i+2 == len(masked) || !isNameByte(masked[i+2])) {
			if j := sqllex.SkipSpace(masked, i+2); j < len(masked) && masked[j] == '(' {
				from = i
			}
		}
	}
	if from < 0 {
		return 0, 0, false
	}
	depth := 0
	for i := from; i < len(masked); i++ {
		switch masked[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return from, i + 1, true
			}
		}
	}
	return 0, 0, false
}
