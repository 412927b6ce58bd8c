//go:build !race

package storm_test

const raceEnabled = false
