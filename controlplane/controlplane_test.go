package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/controlplane"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestStartRefuses(t *testing.T) {
	c := memcluster.New(memcluster.Config{Clock: clock.NewDeterministic(time.Unix(0, 0))})
	for _, tc := range []struct {
		name string
		c    *memcluster.Cluster
		cfg  controlplane.Config
		want string
	}{
		{"nil cluster", nil, controlplane.Config{}, "controlplane: Start: nil cluster"},
		{"a Reconciler of the caller's", c, controlplane.Config{Deployment: deployment.ControllerConfig{
			Reconciler: reconcile.Func(func(context.Context, types.NamespacedName) (reconcile.Result, error) { return reconcile.Result{}, nil })}},
			"Config.Deployment.Reconciler must be nil"},
		{"negative workers", c, controlplane.Config{Deployment: deployment.ControllerConfig{Workers: -1}},
			"controlplane: deployment: ControllerConfig.Workers is negative (-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := controlplane.Start(context.Background(), tc.c, tc.cfg)
			if err == nil {
				cp.Stop()
				t.Fatalf("Start() succeeded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start() error = %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// Stop returns nil after a normal stop, and the simulation ran on the
// cluster's clock (the example covers a rollout).
func TestStop(t *testing.T) {
	c := memcluster.New(memcluster.Config{Clock: clock.NewDeterministic(time.Unix(0, 0)), Seed: 1})
	cp, err := controlplane.Start(context.Background(), c, controlplane.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(context.Background()); err != nil {
		t.Fatalf("Settle() = %v; want nil (everything started)", err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("Stop() = %v; want nil", err)
	}
}
