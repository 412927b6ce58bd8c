//go:build race

package storm_test

// raceEnabled shrinks the storm: every worker is a race-instrumented
// process too, several times slower.
const raceEnabled = true
