//go:build race

package clustertest_test

// raceEnabled reports a -race build.
const raceEnabled = true
