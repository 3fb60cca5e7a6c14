//go:build !unix

package envtest

import "os"

// progressSignals are the signals on which Ginkgo reports its progress.
var progressSignals []os.Signal
