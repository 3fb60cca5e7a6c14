//go:build !unix

package crd

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
