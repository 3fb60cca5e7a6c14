//go:build e2e

package fault

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
)

// cp is the package's control plane (its own: scenarios restart its
// apiserver and compact its etcd); ctrlkitBin the ctrlkit-controller
// binary built for the suite.
var (
	cp         *cluster.ControlPlane
	ctrlkitBin string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "ctrlkit-fault-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ctrlkitBin = filepath.Join(dir, "ctrlkit-controller")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", ctrlkitBin, "../../cmd/ctrlkit-controller").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ctrlkit-controller: %v\n%s", err, out)
			return 1
		}
		start := time.Now()
		if cp, err = cluster.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
		fmt.Fprintf(os.Stderr, "control plane up in %v at %s\n", time.Since(start).Round(time.Millisecond), cp.Server)
		return m.Run()
	}())
}
