package deployment_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/features"
)

// With DeploymentReplicaSetTerminatingReplicas off the Deployment's status
// has no terminatingReplicas (nil), as upstream's calculateStatus writes
// it then; switched off, on and off again on a running Reconciler, the
// written status follows the gate each time and goes back to nil.
func TestReconcilerSwitchesTerminatingGate(t *testing.T) {
	w := newWorld()
	d := w.addDeployment(newDeployment(3, "web:v1"))
	key := deployment.KeyOf(d)
	cfg := w.config()
	cfg.EagerStatus = true
	r := newReconcilerFor(t, cfg)
	ctx := context.Background()
	for range 3 {
		if _, err := r.Reconcile(ctx, key); err != nil {
			t.Fatal(err)
		}
		w.settle()
	}
	// A scale-down leaves terminating pods behind, for one settle.
	w.edit(key, func(d *appsv1.Deployment) { *d.Spec.Replicas = 1 })
	if _, err := r.Reconcile(ctx, key); err != nil {
		t.Fatal(err)
	}
	w.settle()
	for i, step := range []struct {
		gate features.Setting
		want bool // terminatingReplicas set
	}{{features.Off, false}, {features.On, true}, {features.Off, false}} {
		if err := r.SetFeatureGates(features.Gates{DeploymentReplicaSetTerminatingReplicas: step.gate}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, key); err != nil {
			t.Fatal(err)
		}
		got, err := w.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if (got.Status.TerminatingReplicas != nil) != step.want {
			t.Errorf("step %d (gate %v): terminatingReplicas = %v; want set: %t", i, step.gate, got.Status.TerminatingReplicas, step.want)
		}
		if step.want && *got.Status.TerminatingReplicas != 2 {
			t.Errorf("step %d: terminatingReplicas = %d; want 2", i, *got.Status.TerminatingReplicas)
		}
	}
	if err := r.SetFeatureGates(features.Gates{DeploymentReplicaSetTerminatingReplicas: 3}); err == nil {
		t.Errorf("SetFeatureGates accepted a gate set to 3")
	}
	if _, err := deployment.Sync(deployment.State{Deployment: d, FeatureGates: features.Gates{PodDeletionCost: 4}}, t0); err == nil {
		t.Errorf("Sync accepted a gate set to 4")
	}
}
