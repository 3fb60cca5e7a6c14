package deployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Every exported entry point returns an error naming bad input, or its
// documented answer; none panics.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	d := newDeployment(3, "web:v1")
	w := newWorld()
	errOf := func(_ any, err error) error { return err }
	calls := []struct {
		name string
		call func() (any, error)
		want string
	}{
		{"Sync(nil Deployment)", func() (any, error) { return nil, errOf(deployment.Sync(deployment.State{}, t0)) },
			"deployment: State.Deployment is nil"},
		{"Sync(nil ReplicaSet and pod entries)", func() (any, error) {
			p, err := deployment.Sync(deployment.State{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{nil},
				Pods: map[types.UID][]*corev1.Pod{"x": {nil}}}, t0)
			return strings.Count(p.String(), "\n") > 0, err
		}, "true"},
		{"Apply(nil client)", func() (any, error) {
			return nil, errOf(deployment.Apply(ctx, nil, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.Event{}}}))
		}, "deployment: Apply: the Client is nil"},
		{"Apply(empty plan, nil client)", func() (any, error) { return deployment.Apply(ctx, nil, nil, deployment.Plan{}) }, "0"},
		{"Apply(nil Deployment)", func() (any, error) {
			return nil, errOf(deployment.Apply(ctx, w, nil, deployment.Plan{Actions: []deployment.Action{deployment.Event{}}}))
		}, "deployment: Apply: Plan.Deployment is nil"},
		{"Apply(nil ReplicaSet to create)", func() (any, error) {
			return nil, errOf(deployment.Apply(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.CreateReplicaSet{}}}))
		}, "deployment: Apply: Plan.Actions[0] (deployment.CreateReplicaSet) has no object"},
		{"Apply(nil ReplicaSet to scale)", func() (any, error) {
			return nil, errOf(deployment.Apply(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.ScaleReplicaSet{}}}))
		}, "deployment: Apply: Plan.Actions[0] (deployment.ScaleReplicaSet) has no object"},
		{"Apply(nil action)", func() (any, error) {
			return nil, errOf(deployment.Apply(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{nil}}))
		}, "deployment: Apply: Plan.Actions[0] (<nil>) has no object"},
		{"Plan.String(nil objects)", func() (any, error) {
			return deployment.Plan{Actions: []deployment.Action{nil, deployment.CreateReplicaSet{}, deployment.ScaleReplicaSet{From: 1, To: 2},
				deployment.UpdateReplicaSet{}, deployment.UpdateDeployment{}}, UpdateStatus: d}.String(), nil
		}, "<nil action>\ncreate rs/<nil>\nscale rs/<nil> 1→2\nupdate rs/<nil>\nupdate deployment/<nil> (rollback annotation cleared)\n" +
			"status gen=0 replicas=0 updated=0 ready=0 available=0 unavailable=0 revision=\n"},
		{"KeyOf(nil)", func() (any, error) { return deployment.KeyOf(nil), nil }, "/"},
		{"NewController(zero config)", func() (any, error) { return nil, errOf(deployment.NewController(deployment.ControllerConfig{})) },
			"deployment: ControllerConfig needs"},
		{"Terminal(nil)", func() (any, error) { return reconcile.Terminal(nil) == nil, nil }, "true"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			got, err := c.call()
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("error = %q; want %q", err, c.want)
				}
				return
			}
			if s := fmt.Sprint(got); s != c.want {
				t.Errorf("= %q; want %q", s, c.want)
			}
		})
	}
}
