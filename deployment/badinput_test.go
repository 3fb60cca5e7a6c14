package deployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	var zero deployment.EventRules
	ctrl := true
	ownedRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs-uid", ResourceVersion: "1",
		Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d-uid", Controller: &ctrl}}}}
	ownedPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", UID: "rs-uid", Controller: &ctrl}}}}
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
		{"WritePlan(nil client)", func() (any, error) {
			return nil, errOf(deployment.WritePlan(ctx, nil, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.Event{}}}))
		}, "deployment: WritePlan: the Client is nil"},
		{"WritePlan(empty plan, nil client)", func() (any, error) { return deployment.WritePlan(ctx, nil, nil, deployment.Plan{}) }, "0"},
		{"WritePlan(nil Deployment)", func() (any, error) {
			return nil, errOf(deployment.WritePlan(ctx, w, nil, deployment.Plan{Actions: []deployment.Action{deployment.Event{}}}))
		}, "deployment: WritePlan: Plan.Deployment is nil"},
		{"WritePlan(nil ReplicaSet to create)", func() (any, error) {
			return nil, errOf(deployment.WritePlan(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.CreateReplicaSet{}}}))
		}, "deployment: WritePlan: Plan.Actions[0] (deployment.CreateReplicaSet) has no object"},
		{"WritePlan(nil ReplicaSet to scale)", func() (any, error) {
			return nil, errOf(deployment.WritePlan(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{deployment.ScaleReplicaSet{}}}))
		}, "deployment: WritePlan: Plan.Actions[0] (deployment.ScaleReplicaSet) has no object"},
		{"WritePlan(nil action)", func() (any, error) {
			return nil, errOf(deployment.WritePlan(ctx, w, nil, deployment.Plan{Deployment: d, Actions: []deployment.Action{nil}}))
		}, "deployment: WritePlan: Plan.Actions[0] (<nil>) has no object"},
		{"Plan.String(nil objects)", func() (any, error) {
			return deployment.Plan{Actions: []deployment.Action{nil, deployment.CreateReplicaSet{}, deployment.ScaleReplicaSet{From: 1, To: 2},
				deployment.UpdateReplicaSet{}, deployment.UpdateDeployment{}}, UpdateStatus: d}.String(), nil
		}, "<nil action>\ncreate rs/<nil>\nscale rs/<nil> 1→2\nupdate rs/<nil>\nupdate deployment/<nil> (rollback annotation cleared)\n" +
			"status gen=0 replicas=0 updated=0 ready=0 available=0 unavailable=0 revision=\n"},
		{"KeyOf(nil)", func() (any, error) { return deployment.KeyOf(nil), nil }, "/"},
		{"NewController(zero config)", func() (any, error) { return nil, errOf(deployment.NewController(deployment.ControllerConfig{})) },
			"deployment: ControllerConfig needs"},
		{"Terminal(nil)", func() (any, error) { return reconcile.Terminal(nil) == nil, nil }, "true"},

		// Event rules: a nil object asks for nothing; without caches, a
		// ReplicaSet or pod event resolves to no Deployment.
		{"EventRules.DeploymentAdded(nil)", func() (any, error) { return zero.DeploymentAdded(ctx, nil), nil }, "[]"},
		{"EventRules.DeploymentUpdated(nil, d)", func() (any, error) { return zero.DeploymentUpdated(ctx, nil, d), nil }, "[]"},
		{"EventRules.DeploymentUpdated(d, nil)", func() (any, error) { return zero.DeploymentUpdated(ctx, d, nil), nil }, "[]"},
		{"EventRules.DeploymentDeleted(nil)", func() (any, error) { return zero.DeploymentDeleted(ctx, nil), nil }, "[]"},
		{"EventRules.ReplicaSetAdded(nil)", func() (any, error) { return zero.ReplicaSetAdded(ctx, nil), nil }, "[]"},
		{"EventRules.ReplicaSetUpdated(nil, rs)", func() (any, error) { return zero.ReplicaSetUpdated(ctx, nil, ownedRS), nil }, "[]"},
		{"EventRules.ReplicaSetUpdated(rs, nil)", func() (any, error) { return zero.ReplicaSetUpdated(ctx, ownedRS, nil), nil }, "[]"},
		{"EventRules.ReplicaSetDeleted(nil)", func() (any, error) { return zero.ReplicaSetDeleted(ctx, nil), nil }, "[]"},
		{"EventRules.PodDeleted(nil)", func() (any, error) { return zero.PodDeleted(ctx, nil), nil }, "[]"},
		{"zero EventRules.DeploymentAdded(d)", func() (any, error) { return zero.DeploymentAdded(ctx, d), nil }, "[sync ns/web]"},
		{"zero EventRules.ReplicaSetAdded(owned)", func() (any, error) { return zero.ReplicaSetAdded(ctx, ownedRS), nil }, "[]"},
		{"zero EventRules.ReplicaSetAdded(orphan)", func() (any, error) {
			orphan := ownedRS.DeepCopy()
			orphan.OwnerReferences = nil
			return zero.ReplicaSetAdded(ctx, orphan), nil
		}, "[]"},
		{"zero EventRules.ReplicaSetDeleted(owned)", func() (any, error) { return zero.ReplicaSetDeleted(ctx, ownedRS), nil }, "[]"},
		{"zero EventRules.PodDeleted(owned)", func() (any, error) { return zero.PodDeleted(ctx, ownedPod), nil }, "[]"},
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
