package clustertest_test

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain silences klog: client-go and controller-runtime log every
// injected fault there, which would bury the tests' own output.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() || os.Getenv("CLUSTERTEST_KLOG") == "" {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}
