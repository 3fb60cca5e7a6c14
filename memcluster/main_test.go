package memcluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/testhooks"
)

// TestMain has every test of the package compute managedFields both ways
// (testhooks.CheckManagedFields), and fails the run if the cheap road of
// managedfields_fast.go ever differed from the field manager's.
func TestMain(m *testing.M) {
	testhooks.CheckManagedFields.Store(true)
	code := m.Run()
	if found := testhooks.ManagedFieldsMismatches(); len(found) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d updates recorded managedFields unlike the field manager:\n", len(found))
		for _, f := range found {
			fmt.Fprintln(os.Stderr, f)
		}
		code = 1
	}
	os.Exit(code)
}
