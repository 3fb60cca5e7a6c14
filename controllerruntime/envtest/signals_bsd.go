//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package envtest

import (
	"os"
	"syscall"
)

// progressSignals are the signals on which Ginkgo reports its progress.
var progressSignals = []os.Signal{syscall.SIGINFO, syscall.SIGUSR1}
