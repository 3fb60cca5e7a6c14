package deployment_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// settled returns the snapshot of a world in which d has been rolled out
// and settled: one ReplicaSet, complete status.
func settled(t *testing.T, d *appsv1.Deployment) (*world, deployment.State) {
	t.Helper()
	h := newHarness(t, d)
	h.converge(10)
	return h.w, h.state()
}

func TestSyncBranches(t *testing.T) {
	deleted := metav1.NewTime(t0)
	tests := []struct {
		name  string
		state func(t *testing.T) deployment.State
		want  string // the plan, as printed
		err   string // a substring of the error
	}{
		{
			name: "selecting all",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Generation = 2
				d.Spec.Selector = &metav1.LabelSelector{}
				return deployment.State{Deployment: d}
			},
			want: `event Warning SelectingAll "This deployment is selecting all pods. A non-empty selector is required."
status gen=2 replicas=0 updated=0 ready=0 available=0 unavailable=0
`,
		},
		{
			name: "being deleted: status only, no create",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(3, "web:v1")
				d.DeletionTimestamp = &deleted
				return deployment.State{Deployment: d}
			},
			want: "status gen=0 replicas=0 updated=0 ready=0 available=0 unavailable=0 terminating=0 Available=False(MinimumReplicasUnavailable)\n",
		},
		{
			name: "complete and unchanged: nothing to do",
			state: func(t *testing.T) deployment.State {
				_, s := settled(t, newDeployment(3, "web:v1"))
				return s
			},
			want: "no-op\n",
		},
		{
			name: "minReadySeconds change updates the new ReplicaSet first",
			state: func(t *testing.T) deployment.State {
				_, s := settled(t, newDeployment(3, "web:v1"))
				s.Deployment.Spec.MinReadySeconds = 5
				s.Deployment.Generation++
				return s
			},
			want: `update rs/web-6bff6466bb revision=1 minReadySeconds=5
status gen=2 replicas=3 updated=3 ready=3 available=3 unavailable=0 terminating=0 Available=True(MinimumReplicasAvailable) Progressing=True(NewReplicaSetAvailable)
`,
		},
		{
			name: "rollback to previous with a single revision",
			state: func(t *testing.T) deployment.State {
				_, s := settled(t, newDeployment(3, "web:v1"))
				setRollbackTo("0")(s.Deployment)
				return s
			},
			want: `event Warning DeploymentRollbackRevisionNotFound "Unable to find last revision."
update deployment/web (rollback annotation cleared)
`,
		},
		{
			name: "unparseable rollback annotation is ignored",
			state: func(t *testing.T) deployment.State {
				_, s := settled(t, newDeployment(3, "web:v1"))
				setRollbackTo("x")(s.Deployment)
				return s
			},
			want: "no-op\n",
		},
		{
			name: "invalid selector",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
				return deployment.State{Deployment: d}
			},
			err: "has invalid label selector",
		},
		{
			name: "unknown strategy",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Spec.Strategy.Type = "Canary"
				return deployment.State{Deployment: d}
			},
			err: "unexpected deployment strategy type: Canary",
		},
		{
			name: "nil maxSurge is an error where upstream's NewRSNewReplicas fails",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				u := intstr.FromInt32(1)
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &u}
				return deployment.State{Deployment: d}
			},
			err: "nil value for IntOrString",
		},
		{
			name:  "no deployment",
			state: func(t *testing.T) deployment.State { return deployment.State{} },
			err:   "State.Deployment is nil",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state(t)
			before := deepCopyState(s)
			p, err := deployment.Sync(s, t0.Add(time.Hour))
			if diff := cmp.Diff(before, s); diff != "" {
				t.Errorf("Sync modified its input (-before +after):\n%s", diff)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Sync() error = %v; want %q", err, tt.err)
				}
				if !p.IsEmpty() {
					t.Errorf("Sync() on error returned a plan:\n%s", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.String()); diff != "" {
				t.Errorf("Sync() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncStaleDesiredAnnotation is the defect fixed in scale(): the only
// active ReplicaSet has spec.replicas == D but a stale desired-replicas
// annotation. Upstream never refreshes it, so every sync is a scaling event
// and the new template never rolls out; we refresh it and the rollout
// proceeds on the next sync.
func TestSyncStaleDesiredAnnotation(t *testing.T) {
	_, s := settled(t, newDeployment(5, "web:v1"))
	rs := s.ReplicaSets[0].DeepCopy()
	rs.Annotations[rollout.DesiredReplicasAnnotation] = "6"
	s.ReplicaSets[0] = rs
	setImage("web:v2")(s.Deployment)
	p, err := deployment.Sync(s, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := "scale rs/web-6bff6466bb 5→5 (annotations)\n" +
		"status gen=1 replicas=5 updated=0 ready=5 available=5 unavailable=0 terminating=0 Available=True(MinimumReplicasAvailable) Progressing=True(NewReplicaSetAvailable)\n"
	if diff := cmp.Diff(want, p.String()); diff != "" {
		t.Errorf("Sync() mismatch (-want +got):\n%s", diff)
	}
}

// TestSyncRecreateAfterPausedRollout is the upstream livelock fixed in
// Sync: a Deployment paused mid-rollout (two active ReplicaSets, both
// annotated desired-replicas=6) is switched to Recreate, scaled to 4 and
// resumed. Every sync is then a scaling event, and upstream's scale() does
// nothing for it (it scales proportionally only for RollingUpdate), so
// upstream never gets further. Sync goes on to the Recreate rollout
// instead, and the Deployment completes on the new template.
func TestSyncRecreateAfterPausedRollout(t *testing.T) {
	h := newHarness(t, newDeployment(6, "web:v1"))
	defer func() {
		if t.Failed() {
			t.Logf("trace:\n%s", h.out.String())
		}
	}()
	h.converge(10)
	h.edit("image web:v2", setImage("web:v2"))
	h.sync() // the new ReplicaSet starts at maxSurge = 2
	h.edit("pause", setPaused(true))
	h.sync()
	h.edit("switch to Recreate", func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	})
	h.edit("scale to 4", setReplicas(4))
	h.sync() // paused: scale() leaves two active ReplicaSets alone
	h.edit("resume", setPaused(false))

	// The state upstream never leaves.
	s := h.state()
	if active := rollout.FilterActive(s.ReplicaSets); len(active) != 2 {
		t.Fatalf("before resuming: %d active ReplicaSets; want 2 (mid-rollout)\n%s", len(active), h.w.describe(h.key))
	}
	if scaling, err := rollout.IsScalingEvent(s.Deployment, nil, s.ReplicaSets); !scaling || err != nil {
		t.Fatalf("before resuming: IsScalingEvent() = %v, %v; want true, nil\n%s", scaling, err, h.w.describe(h.key))
	}

	h.converge(10)
	d, err := h.w.Get(h.key)
	if err != nil {
		t.Fatal(err)
	}
	if !rollout.DeploymentComplete(d, d.Status) || d.Status.ObservedGeneration != d.Generation {
		t.Errorf("not complete after converging:\n%s", h.w.describe(h.key))
	}
	rss, err := h.w.List(h.key.Namespace, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rs := range rss {
		got[image(rs)] = fmt.Sprintf("spec=%d desired=%s", ptrVal(rs.Spec.Replicas), rs.Annotations[rollout.DesiredReplicasAnnotation])
	}
	want := map[string]string{"web:v1": "spec=0 desired=4", "web:v2": "spec=4 desired=4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReplicaSets after converging mismatch (-want +got):\n%s", diff)
	}
}

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
