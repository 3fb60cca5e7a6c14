//go:build race

package clustertest_test

// raceEnabled: the race detector slows benches down about fivefold, and
// explorations in the default suite run fewer seeds under it.
const raceEnabled = true
