//go:build !race

package e2e

// raceEnabled is false without the race detector; see race_test.go.
const raceEnabled = false
