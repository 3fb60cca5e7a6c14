package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubernetes/pkg/controller"
)

// seed3878World is the cache the Deployment controller decided on in e2e
// soak seed 3878 (CTRLKIT_E2E_SEED=3878 go test -run TestRandomised ./e2e,
// before the fix): Deployment r0, 6 replicas, maxSurge 1, maxUnavailable
// 50%, has just been given a new template (app:2). Its cache holds the
// ReplicaSet of app:3 at spec.replicas 3, but the API server has it at 6:
// the rollback step that scaled it 3 → 6 was answered with an injected
// 429 after the write happened, and its event was still on the way
// (watch lag 2.4 s). The ReplicaSet of app:bad has been scaled to 0, its
// four pods still terminating.
func seed3878World(now time.Time) deployWorld {
	surge, unavailable := intstr.FromInt32(1), intstr.FromString("50%")
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 4, ResourceVersion: "83",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Annotations: map[string]string{annRev: "3"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(6)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: imageTemplate("app:2"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 7, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3},
	}
	rs := func(image string, rev int, spec, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
		tpl := imageTemplate(image)
		hash := controller.ComputeHash(&tpl, nil)
		tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		return &appsv1.ReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + hash, Namespace: "ns", UID: types.UID("uid-web-" + hash), ResourceVersion: "1", Generation: 3,
				Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(now.Add(-age)),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
				Annotations:       map[string]string{annRev: fmt.Sprint(rev), annDesired: "6", annMax: "7"},
			},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(spec),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
				Template: tpl,
			},
			Status: appsv1.ReplicaSetStatus{Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: available,
				AvailableReplicas: available, ObservedGeneration: 3, TerminatingReplicas: ptr(int32(0))},
		}
	}
	return deployWorld{d: d, now: now, rss: []*appsv1.ReplicaSet{
		rs("app:3", 3, 3, 3, 3, 3*time.Minute), // at 6 on the API server
		rs("app:bad", 2, 0, 4, 0, 2*time.Minute),
	}}
}

func imageTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// TestSeed3878UpstreamDecidesTheSame is the evidence behind the fix of e2e
// soak seed 3878 (internal/writes): on the cache the Deployment
// controller saw, upstream's syncDeployment makes the same decision as
// ctrlkit's Sync, a new ReplicaSet at 4 = 6 + 1 − (3 + 0). With the
// ReplicaSet of app:3 really at 6, that is 10 replicas for 6 + 1: the
// surge violation comes from the stale cache, not from the decision.
// Upstream has no defence against it (it does not track its own writes);
// ctrlkit's controllers settle a failed ReplicaSet write with a live read
// and wait for its event (docs/fidelity.md, "Deliberate differences").
func TestSeed3878UpstreamDecidesTheSame(t *testing.T) {
	w := seed3878World(time.Now())
	u := upstreamDeploySync(context.Background(), w.clone())
	o := oursDeploySync(w.clone())
	for _, side := range []struct {
		name string
		res  deployResult
	}{{"upstream", u}, {"ctrlkit", o}} {
		if side.res.err != nil {
			t.Fatalf("%s: sync error %v", side.name, side.res.err)
		}
		if len(side.res.created) != 1 {
			t.Fatalf("%s created %v; want one ReplicaSet", side.name, side.res.created)
		}
		created := side.res.rss[side.res.created[0]]
		if n := *created.Spec.Replicas; n != 4 {
			t.Errorf("%s created %s at %d replicas; want 4 (6 + 1 − 3)", side.name, created.Name, n)
		}
	}
	if known, diff := compareDeploy(w, u, o); diff != "" {
		t.Errorf("upstream and ctrlkit disagree on the seed 3878 cache (known: %q):\n%s", known, diff)
	}
}

// TestShrinkingStatusUpstreamGoesBelowMinAvailable is the evidence behind
// the fix of seed 2223 of e2e's TestRandomisedGates (deployment's
// shrinkingAvailability): Deployment web, 8 replicas, maxSurge 2,
// maxUnavailable 0, gets a new template while old ReplicaSet X has just
// been scaled from 4 to 3 (its status, behind its generation, still counts
// 4 available pods, one of them being deleted) and the older ReplicaSet Y
// is at 6 with 5 available. Upstream counts X's 4, removes Y's unhealthy pod and
// then one more: X 3 + Y 4 = 7 available for a minimum of 8. Ours counts
// at most X's spec.replicas and stops after the unhealthy pod. Given the
// world with X's count capped, upstream decides as ours.
func TestShrinkingStatusUpstreamGoesBelowMinAvailable(t *testing.T) {
	now := time.Now()
	surge, unavailable := intstr.FromInt32(2), intstr.FromInt32(0)
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 5, ResourceVersion: "311",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Annotations: map[string]string{annRev: "3"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(8)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: imageTemplate("app:crash"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 10, UpdatedReplicas: 6, ReadyReplicas: 9, AvailableReplicas: 9},
	}
	rs := func(image string, rev string, spec, replicas, available int32, gen, observed int64, age time.Duration) *appsv1.ReplicaSet {
		tpl := imageTemplate(image)
		hash := controller.ComputeHash(&tpl, nil)
		tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		return &appsv1.ReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + hash, Namespace: "ns", UID: types.UID("uid-web-" + hash), ResourceVersion: "1", Generation: gen,
				Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(now.Add(-age)),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
				Annotations:       map[string]string{annRev: rev, annDesired: "8", annMax: "10"},
			},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(spec),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
				Template: tpl,
			},
			Status: appsv1.ReplicaSetStatus{Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: available,
				AvailableReplicas: available, ObservedGeneration: observed, TerminatingReplicas: ptr(int32(0))},
		}
	}
	y := rs("app:1", "3", 6, 6, 5, 9, 9, 3*time.Minute) // the older: scaled down first
	x := rs("app:4", "2", 3, 4, 4, 9, 8, 2*time.Minute)
	w := deployWorld{d: d, now: now, rss: []*appsv1.ReplicaSet{y, x}}
	ctx := context.Background()
	u := upstreamDeploySync(ctx, w.clone())
	o := oursDeploySync(w.clone())
	size := func(res deployResult, name string) int32 { return *res.rss[name].Spec.Replicas }
	if got := size(u, y.Name); got != 4 {
		t.Errorf("upstream left Y at %d; want 4 (the scenario no longer shows its race)", got)
	}
	if got := size(o, y.Name); got != 5 {
		t.Errorf("ours left Y at %d; want 5 (X's 3 and Y's 5: the minimum of 8)", got)
	}
	if dev, ok := staleStatusesAgree(ctx, w, o); !ok || dev != devShrinkingStatus {
		t.Errorf("upstream on the adjusted world: agrees %t as %q; want it to decide as ours (%q)", ok, dev, devShrinkingStatus)
	}
}
