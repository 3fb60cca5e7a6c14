package clustertest

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestCRDsNeedSupport checks that CRDs without Options.CRDSupport are a
// clear error, not silently ignored. (Package controllerruntime/crd tests
// the bench with CRDs.)
func TestCRDsNeedSupport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := start(t, Options{CRDDirectoryPaths: []string{"config/crd/bases"}})
		if err == nil || !strings.Contains(err.Error(), "need Options.CRDSupport: set it to crd.Bench") {
			t.Errorf("start = %v; want the error naming crd.Bench", err)
		}
	})
}
