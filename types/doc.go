// Package types is the DuckDB type system as far as statistics need it:
// type names (ParseType), a Value model, and per type a Codec that turns a
// value into order-preserving bytes and back, and into DuckLake's text form
// and back.
//
// # Encodings
//
// Every statistics bound (min, max) is stored as the bytes below. For an
// ordered codec, bytes.Compare of two encodings is the type's value order in
// DuckDB, so the catalog and the planner compare bounds without decoding.
// Encoders are append-style: Append(dst, v) returns dst extended.
//
//	type                          bytes  encoding
//	boolean                       1      0x00 false, 0x01 true
//	int8 (tinyint)                1      big-endian, sign bit flipped: -128→00 0→80 127→ff
//	int16 / int32 / int64         2/4/8  the same, at the type's width
//	int128 (hugeint)              16     the same over 128 bits
//	uint8 … uint64                1…8    plain big-endian
//	uint128 (uhugeint)            16     plain big-endian
//	float32 / float64             4/8    x ≥ 0: sign bit set; x < 0: all bits inverted;
//	                                     -0.0 and +0.0 both as +0.0; NaN: none (ErrNaN)
//	decimal(p,s), p ≤ 18          8      unscaled integer at scale s, as int64
//	decimal(p,s), p > 18          16     unscaled integer at scale s, as int128
//	date                          4      days since 1970-01-01, as int32 (±infinity at the ends)
//	time                          8      microseconds since midnight, as int64
//	time_ns                       8      nanoseconds since midnight, as int64
//	timetz                        12     UTC micros (local − offset) as int64, then
//	                                     15:59:59 − offset as uint32 (DuckDB's tie order)
//	timestamp / _s / _ms / _ns    8      count of the type's own unit since the epoch, as int64
//	timestamptz                   8      microseconds since the epoch, UTC, as int64
//	uuid                          16     the RFC 4122 bytes
//	varchar, blob                 n      the bytes as they are, compared unsigned
//	enum('a',…)                   4      the dictionary index, big-endian
//	interval                      16     months, days (int32), micros (int64): stored,
//	                                     NOT ordered, never used to prune
//	json, variant, geometry,      —      no codec: no statistics, never pruned
//	list, array, struct, map,
//	bare enum, unknown
//
// "as intN" means big-endian with the sign bit flipped, like int8 above.
//
// # Zeros and NaN
//
// DuckDB holds -0.0 = +0.0, so both encode as +0.0: a lower bound 0 admits
// -0.0 and an upper bound 0 admits +0.0, and no comparison on encodings can
// split the two zeros where DuckDB would not. NaN is never a bound: DuckDB
// sorts NaN above +inf and NaN = NaN, so a NaN in a unit is recorded in its
// contains_nan flag and the bounds cover the other values only.
//
// # Text
//
// Format writes DuckLake's text form, which is DuckDB's CAST(v AS VARCHAR)
// with TIMESTAMPTZ and TIMETZ at UTC offset +00. Parse is tolerant: booleans
// 0/1/true/false/t/f/yes/no; inf, -inf, infinity, nan; numbers with any
// number of fraction digits and an exponent; timestamps with a space or a T,
// fractional seconds of any length, an offset (Z, ±HH, ±HH:MM, ±HHMM), an
// optional (BC); uuid in any case, with or without hyphens or braces; blobs
// with \xHH escapes. Text more precise than the type rounds as the caller
// says (ParseRounded): Floor for a lower bound, Ceil for an upper one, so a
// parsed bound never excludes a value. A TIMESTAMPTZ or TIMETZ text without
// an offset is ErrNoOffset: its instant depends on a session time zone the
// catalog does not know, so it is unusable as a bound.
//
// # Type names
//
// ParseType reads DuckLake's names (int8 … uint128, float32, float64,
// decimal(p,s), timestamp_ns, timestamptz, list, struct, map, …) and DuckDB's
// aliases. Where the two disagree DuckLake wins: `int8` is an 8-bit integer
// here, as in ducklake_column.column_type, not DuckDB's alias for BIGINT.
// A name it does not know parses to an Unknown type that keeps its text.
package types
