//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
)

// cp is the package's control plane.
var cp *cluster.ControlPlane

// upstreamNeighbours are the kube-controller-manager controllers that run
// next to ours on cp.
const upstreamNeighbours = "garbage-collector-controller,disruption-controller,resourcequota-controller"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var err error
	start := time.Now()
	cp, err = cluster.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	// Cascading deletion needs the garbage collector, PodDisruptionBudgets
	// (evictions) the disruption controller, and ResourceQuotas the quota
	// controller (it computes their usage, and gives room back as pods
	// go): they are the only upstream controllers running next to ours.
	if err := cp.StartKCM(ctx, upstreamNeighbours); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "control plane up in %v at %s\n", time.Since(start).Round(time.Millisecond), cp.Server)
	return m.Run()
}
