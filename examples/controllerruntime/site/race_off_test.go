//go:build !race

package site

// raceEnabled: see race_on_test.go.
const raceEnabled = false
