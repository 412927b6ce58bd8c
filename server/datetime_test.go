package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Dates and timestamps before the year 1 and at infinity cross the
// protocol as PostgreSQL spells them, both ways: as parameters of their
// types in text and binary, and as answers in text and binary.
// PostgreSQL writes "0044-03-15 BC" where DuckDB writes "0044-03-15 (BC)",
// and DuckDB's date cast reads PostgreSQL's spelling as the year 44 after
// Christ (it ignores what follows a date).
func TestDatesBeforeChristAndInfinity(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	pc := f.connect(t, pgx.QueryExecModeSimpleProtocol).PgConn()
	m := pgtype.NewMap()
	bc := time.Date(-43, 3, 15, 10, 30, 0, 500000000, time.UTC)
	for _, tc := range []struct {
		typ   string
		oid   uint32
		in    any
		duck  string // DuckDB's text of the value
		pgTxt string // PostgreSQL's
	}{
		{"DATE", pgtype.DateOID, pgtype.Date{Time: time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), Valid: true}, "0044-03-15 (BC)", "0044-03-15 BC"},
		{"TIMESTAMP", pgtype.TimestampOID, pgtype.Timestamp{Time: bc, Valid: true}, "0044-03-15 (BC) 10:30:00.5", "0044-03-15 10:30:00.5 BC"},
		{"TIMESTAMPTZ", pgtype.TimestamptzOID, pgtype.Timestamptz{Time: bc, Valid: true}, "0044-03-15 (BC) 10:30:00.5+00", "0044-03-15 10:30:00.5+00 BC"},
		{"DATE", pgtype.DateOID, pgtype.Date{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, "-infinity", "-infinity"},
		{"TIMESTAMP", pgtype.TimestampOID, pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, "infinity", "infinity"},
		{"TIMESTAMPTZ", pgtype.TimestamptzOID, pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, "infinity", "infinity"},
		{"DATE", pgtype.DateOID, pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true}, "2024-02-29", "2024-02-29"},
	} {
		for _, format := range []int16{0, 1} {
			// In: the parameter reaches DuckDB as the same instant.
			raw, err := m.Encode(tc.oid, format, tc.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := pc.ExecParams(ctx, "SELECT CAST($1 AS VARCHAR)", [][]byte{raw}, []uint32{tc.oid}, []int16{format}, nil).Read()
			if r.Err != nil {
				t.Errorf("%s parameter %v, format %d: %v", tc.typ, tc.in, format, r.Err)
			} else if got := string(r.Rows[0][0]); got != tc.duck {
				t.Errorf("%s parameter %v, format %d: DuckDB has %q, want %q", tc.typ, tc.in, format, got, tc.duck)
			}
			// Out: the answer is PostgreSQL's text, or binary that reads
			// back as what was sent.
			r = pc.ExecParams(ctx, "SELECT CAST("+sqlQuote(tc.duck)+" AS "+tc.typ+")", nil, nil, nil, []int16{format}).Read()
			if r.Err != nil {
				t.Errorf("%s %q in format %d: %v", tc.typ, tc.duck, format, r.Err)
				continue
			}
			if format == 0 {
				if got := string(r.Rows[0][0]); got != tc.pgTxt {
					t.Errorf("%s %q as text: %q, want PostgreSQL's %q", tc.typ, tc.duck, got, tc.pgTxt)
				}
				continue
			}
			if got, want := r.Rows[0][0], raw; string(got) != string(want) {
				t.Errorf("%s %q as binary: %x, want %x", tc.typ, tc.duck, got, want)
			}
		}
	}
}

// PostgreSQL's other spellings of a year before the first, as typed
// parameters in text: spaces around, ISO 8601's T, a lower-case bc.
func TestDatesBeforeChristSpellings(t *testing.T) {
	f := newFixture(t, newConfig())
	pc := f.connect(t, pgx.QueryExecModeSimpleProtocol).PgConn()
	for _, tc := range []struct {
		oid      uint32
		in, duck string
	}{
		{pgtype.DateOID, "  0044-03-15 BC ", "0044-03-15 (BC)"},
		{pgtype.DateOID, "0044-03-15 bc", "0044-03-15 (BC)"},
		{pgtype.TimestampOID, "0044-03-15T10:00:00 BC", "0044-03-15 (BC) 10:00:00"},
		{pgtype.TimestampOID, "0044-03-15  10:00:00.25   BC", "0044-03-15 (BC) 10:00:00.25"},
		{pgtype.TimestamptzOID, "0044-03-15T10:00:00Z BC", "0044-03-15 (BC) 10:00:00+00"},
		{pgtype.TimestamptzOID, "0044-03-15 10:00:00+00 BC", "0044-03-15 (BC) 10:00:00+00"},
		{pgtype.DateOID, "2024-02-29", "2024-02-29"},
	} {
		r := pc.ExecParams(context.Background(), "SELECT CAST($1 AS VARCHAR)", [][]byte{[]byte(tc.in)}, []uint32{tc.oid}, nil, nil).Read()
		if r.Err != nil {
			t.Errorf("oid %d %q: %v", tc.oid, tc.in, r.Err)
		} else if got := string(r.Rows[0][0]); got != tc.duck {
			t.Errorf("oid %d %q: DuckDB has %q, want %q", tc.oid, tc.in, got, tc.duck)
		}
	}
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
