package deployment_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// An old ReplicaSet just scaled from 4 to 3 whose status, behind its
// generation, still counts 4 available pods (one being deleted) counts 3
// toward the availability that lets the other old ReplicaSets scale down
// (e2e soak seed 2223 of TestRandomisedGates; conformance
// TestShrinkingStatusUpstreamGoesBelowMinAvailable shows upstream, which
// trusts the 4, leaving 7 available for a minimum of 8).
func TestSyncRollingCountsShrinkingOldStatusAtItsSpec(t *testing.T) {
	d := newDeployment(8, "web:crash")
	surge, unavailable := intstr.FromInt32(2), intstr.FromInt32(0)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	d.UID, d.Generation = "d-uid", 5
	d.Annotations = map[string]string{rollout.RevisionAnnotation: "3"}
	rs := func(img, rev string, spec, available int32, gen, observed int64, age time.Duration) *appsv1.ReplicaSet {
		tpl := *d.Spec.Template.DeepCopy()
		tpl.Spec.Containers[0].Image = img
		hash := rollout.ComputeHash(&tpl, nil)
		tpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + hash, UID: types.UID("uid-" + hash), Labels: tpl.Labels,
				Generation: gen, CreationTimestamp: metav1.NewTime(t0.Add(-age)),
				Annotations:     map[string]string{rollout.RevisionAnnotation: rev, rollout.DesiredReplicasAnnotation: "8", "deployment.kubernetes.io/max-replicas": "10"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &spec, Template: tpl, Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}},
			Status: appsv1.ReplicaSetStatus{Replicas: max(spec, available), FullyLabeledReplicas: max(spec, available), ReadyReplicas: available,
				AvailableReplicas: available, ObservedGeneration: observed, TerminatingReplicas: new(int32)},
		}
	}
	y := rs("web:1", "3", 6, 5, 9, 9, 3*time.Minute)
	x := rs("web:4", "2", 3, 4, 9, 8, 2*time.Minute) // shrinking, status behind
	plan, err := deployment.Sync(deployment.State{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{y, x}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int32{}
	for _, a := range plan.Actions {
		if s, ok := a.(deployment.ScaleReplicaSet); ok {
			sizes[s.ReplicaSet.Name] = s.To
		}
	}
	if got, ok := sizes[y.Name]; !ok || got != 5 {
		t.Errorf("Y scaled to %d (scaled: %t); want 5, its unhealthy pod only:\n%s", got, ok, plan)
	}
	if _, ok := sizes[x.Name]; ok {
		t.Errorf("X scaled:\n%s", plan)
	}
}
