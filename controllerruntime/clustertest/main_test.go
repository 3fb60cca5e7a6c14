package clustertest_test

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/testhooks"

	"k8s.io/klog/v2"
)

// TestMain silences klog: client-go and controller-runtime log every
// injected fault there, which would bury the tests' own output. With
// CTRLKIT_CHECK_MANAGEDFIELDS=1 every update's managedFields are computed
// both ways (testhooks.CheckManagedFields), and a difference fails the run.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() || os.Getenv("CLUSTERTEST_KLOG") == "" {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	testhooks.CheckManagedFields.Store(os.Getenv("CTRLKIT_CHECK_MANAGEDFIELDS") == "1")
	code := m.Run()
	if found := testhooks.ManagedFieldsMismatches(); len(found) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d updates recorded managedFields unlike the field manager:\n%s\n", len(found), strings.Join(found, "\n"))
		code = 1
	}
	os.Exit(code)
}
