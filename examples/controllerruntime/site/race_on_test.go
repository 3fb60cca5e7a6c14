//go:build race

package site

// raceEnabled: the race detector slows benches down about fivefold, and
// the explorations run less under it.
const raceEnabled = true
