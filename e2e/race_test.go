//go:build race

package e2e

// raceEnabled: the race detector slows the simulated kubelet about five
// times, so the largest tests shrink to stay within the test budget.
const raceEnabled = true
