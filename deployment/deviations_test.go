package deployment_test

// Regression tests of the deliberate differences from upstream decided in
// Sync (docs/fidelity.md, "Deliberate differences from upstream").

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// TestSyncRecreateWaitsForOldStatus is the race of e2e soak seed 283: the
// old ReplicaSet has been scaled to 0, but its status has not observed
// that generation yet, and reads 0 replicas while pods its controller
// created (and its cache had not seen) still run. Upstream's
// oldPodsRunning trusts status.replicas and creates the new ReplicaSet
// beside them; Sync waits until the old status is current.
func TestSyncRecreateWaitsForOldStatus(t *testing.T) {
	d := newDeployment(3, "web:v1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	_, s := settled(t, d)
	old := s.ReplicaSets[0].DeepCopy()
	old.Spec.Replicas = ptr(int32(0))
	old.Generation++ // scaled down; the status still says generation-1 and 0 replicas
	old.Status = appsv1.ReplicaSetStatus{ObservedGeneration: old.Generation - 1}
	s.ReplicaSets[0] = old
	s.Pods = map[types.UID][]*corev1.Pod{} // the pod cache has not seen them either
	setImage("web:v2")(s.Deployment)

	p, err := deployment.Sync(s, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.String(), "create rs/") {
		t.Fatalf("Sync created the new ReplicaSet while the old one's status was not current:\n%s", p)
	}

	old = old.DeepCopy()
	old.Status.ObservedGeneration = old.Generation
	s.ReplicaSets[0] = old
	if p, err = deployment.Sync(s, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.String(), "create rs/") {
		t.Errorf("Sync did not create the new ReplicaSet once the old status was current:\n%s", p)
	}
}

// A nil spec.replicas counts as 1, the API server's default (the one rule
// of the library, rollout.DefaultReplicas): Sync decides for it exactly as
// for an explicit 1.
func TestSyncNilReplicasIsTheAPIDefault(t *testing.T) {
	explicit := newDeployment(1, "web:v1")
	implicit := newDeployment(1, "web:v1")
	implicit.Spec.Replicas = nil
	want, err := deployment.Sync(deployment.State{Deployment: explicit}, t0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := deployment.Sync(deployment.State{Deployment: implicit}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "replicas=1 ") {
		t.Errorf("Sync with nil replicas:\n%s\nwant a ReplicaSet of 1", got)
	}
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("Sync(nil replicas) differs from Sync(1) (-want +got):\n%s", diff)
	}
}

// TestSyncTemplateBackWhileScaling: the template goes back to an old
// ReplicaSet's and spec.replicas changes in the same edit. The old
// ReplicaSet becomes the new one and its revision annotation is bumped;
// upstream bumps it in isScalingEvent and then, its list stale, sends the
// same Update again from sync() (kube-apiserver answers the second with
// Conflict, and the sync is retried). Sync writes it once (deliberate
// difference; conformance TestReplicaSetUpdatedOnce shows upstream's two).
func TestSyncTemplateBackWhileScaling(t *testing.T) {
	h := newHarness(t, newDeployment(4, "web:v1"))
	h.converge(10)
	h.edit("image web:v2", setImage("web:v2"))
	h.converge(20)
	h.edit("image web:v1 and 6 replicas", func(d *appsv1.Deployment) {
		setImage("web:v1")(d)
		setReplicas(6)(d)
	})
	p := h.sync()
	updates := 0
	for _, a := range p.Actions {
		if u, ok := a.(deployment.UpdateReplicaSet); ok {
			updates++
			if image(u.ReplicaSet) != "web:v1" || u.ReplicaSet.Annotations[rollout.RevisionAnnotation] != "3" {
				t.Errorf("update of %s (image %s) to revision %s; want web:v1's ReplicaSet to revision 3", u.ReplicaSet.Name, image(u.ReplicaSet), u.ReplicaSet.Annotations[rollout.RevisionAnnotation])
			}
		}
	}
	if updates != 1 {
		t.Errorf("%d ReplicaSet updates; want 1\nplan:\n%s", updates, p)
	}
}

// TestSyncRollbackWritesNoStatus: a sync that rolls back writes the
// Deployment (its template, its annotations with the synced revision, the
// rollback annotation cleared) and no status when the status is
// unchanged. Upstream writes the status subresource first, to sync the
// revision annotation that its Update then writes again (deliberate
// difference; conformance TestRollbackWritesNoStatus).
func TestSyncRollbackWritesNoStatus(t *testing.T) {
	h := newHarness(t, newDeployment(3, "web:v1"))
	h.converge(10)
	h.edit("image web:v2", setImage("web:v2"))
	h.converge(20)
	s := h.state()
	d := s.Deployment.DeepCopy()
	d.Annotations = map[string]string{rollout.RevisionAnnotation: "1", rollout.RollbackToAnnotation: "1"}
	s.Deployment = d
	p, err := deployment.Sync(s, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := "update deployment/web (rollback annotation cleared)\n" +
		`event Normal DeploymentRollback "Rolled back deployment \"web\" to revision 1"` + "\n"
	if diff := cmp.Diff(want, p.String()); diff != "" {
		t.Errorf("Sync() mismatch (-want +got):\n%s", diff)
	}
	for _, a := range p.Actions {
		if u, ok := a.(deployment.UpdateDeployment); ok && u.Deployment.Annotations[rollout.RevisionAnnotation] != "2" {
			t.Errorf("the rollback's update carries revision %q; want 2 (the new ReplicaSet's)", u.Deployment.Annotations[rollout.RevisionAnnotation])
		}
	}
}

// TestSyncRollingWaitsForNewStatus is the race of e2e soak seeds 1535,
// 1620 and 1788: the new ReplicaSet's status has not observed its
// generation (here: it was just scaled back up after a scale-down deleted
// the pod its status still counts as available). Upstream counts that pod
// and scales the old ReplicaSet down below maxUnavailable; Sync counts the
// new ReplicaSet as having no available pod until its status is current.
func TestSyncRollingWaitsForNewStatus(t *testing.T) {
	d := newDeployment(3, "web:v2")
	fenceposts(intstr.FromInt32(1), intstr.FromInt32(1))(d)
	d.UID, d.Generation = "d-uid", 2
	mk := func(img string, spec int32, gen, observed int64, available int32, minute int) *appsv1.ReplicaSet {
		dd := d.DeepCopy()
		dd.Spec.Template.Spec.Containers[0].Image = img
		rs, err := rollout.NewReplicaSet(dd, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs.UID = types.UID("uid-" + img)
		rs.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
		rs.Spec.Replicas = ptr(spec)
		rs, _ = rollout.SetReplicasAnnotations(rs, 3, 4)
		rs.Generation = gen
		rs.Status = appsv1.ReplicaSetStatus{Replicas: available, ReadyReplicas: available, AvailableReplicas: available, ObservedGeneration: observed}
		return rs
	}
	for _, tc := range []struct {
		name     string
		observed int64
		want     string
	}{
		{"new status behind its generation: one step, availability kept", 1, "scale rs/%s 3→2"},
		{"new status current: upstream's two steps", 2, "scale rs/%s 3→1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := mk("web:v1", 3, 1, 1, 3, 0)
			cur := mk("web:v2", 1, 2, tc.observed, 1, 1)
			p, err := deployment.Sync(deployment.State{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}}, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(tc.want, old.Name); !strings.Contains(p.String(), want+"\n") {
				t.Errorf("Sync() =\n%s\nwant %q", p, want)
			}
		})
	}
}
