//go:build !linux

package envtest

// endChildren ends the test binary's child processes where it can list
// them (Linux); elsewhere it does nothing.
func endChildren() []int { return nil }
