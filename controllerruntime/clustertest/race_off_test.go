//go:build !race

package clustertest_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
