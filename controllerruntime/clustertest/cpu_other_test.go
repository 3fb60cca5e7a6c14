//go:build !unix

package clustertest_test

// cpuSeconds is not measured here.
func cpuSeconds() float64 { return 0 }
