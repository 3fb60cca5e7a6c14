package deployment_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPureCore enforces the house rule: only the shell files mention
// context.Context (and so call interface methods that do I/O), and no
// core file reads the clock.
func TestPureCore(t *testing.T) {
	shell := map[string]bool{"doc.go": true, "apply.go": true, "reconciler.go": true, "controller.go": true, "interfaces.go": true, "handlers.go": true, "workload.go": true, "tracking.go": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || shell[f] {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{"context.", "time.Now", "metav1.Now", "go func", "\"github.com/ctrlkit/ctrlkit/informer\"", "\"github.com/ctrlkit/ctrlkit/workqueue\""} {
			if strings.Contains(string(b), banned) {
				t.Errorf("%s mentions %s; only shell files may", f, banned)
			}
		}
	}
}
