// Package expr turns a WHERE clause into the predicate the planner
// (package prune) evaluates over statistics: names resolved to a table's
// columns, literals cast to the columns' types as DuckDB casts them, and
// everything it cannot follow exactly bound to "may match" (Opaque),
// never to a guess.
//
//	parse.go    Parse: a WHERE clause's text, in DuckDB's syntax, into
//	            Nodes (a predicate given as text: rocklake plan, Lake.Plan,
//	            Iceberg scan planning)
//	build.go    Nodes built without text, by a caller holding another
//	            parser's tree (engine reads DuckDB's)
//	bind.go     Bind, Compile: Nodes into a Pred over a table's columns,
//	            comparison by comparison
//	literal.go  a literal against a column: its value in the column's
//	            type, its neighbours when it falls between two values,
//	            or out of the type's range (below, above)
//	numeric.go  numbers compared in FLOAT or DOUBLE, as DuckDB does when
//	            an operand is one
//	variant.go  VARIANT sub-fields (v.a.b, v['a']) bound to their
//	            shredded statistics
//	pred.go     Pred, the bound form, and its text
package expr
