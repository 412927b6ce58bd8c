// Package layers holds one test: every package of the module imports only
// packages of lower layers (and its own sub-packages, or its parent), by
// the table in docs/architecture.md, which the test parses. A
// package missing from the table fails the test too, so a new package is
// placed on purpose.
package layers
