package deployment_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
		// The rule the ReplicaSet controller applies too (what the API
		// server rejects), with the object named: a custom workload's spec
		// reaches Sync unvalidated.
		{
			name: "selector does not match the template",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Spec.Template.Labels = map[string]string{"app": "other"}
				return deployment.State{Deployment: d}
			},
			err: `Deployment ns/web: spec.selector "app=web" does not match spec.template.metadata.labels "app=other"; the API server rejects it`,
		},
		{
			name: "nil selector",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Spec.Selector = nil
				return deployment.State{Deployment: d}
			},
			err: "Deployment ns/web: spec.selector is nil; the API server requires one",
		},
		{
			name: "template without labels",
			state: func(t *testing.T) deployment.State {
				d := newDeployment(1, "web:v1")
				d.Spec.Template.Labels = nil
				return deployment.State{Deployment: d}
			},
			err: "Deployment ns/web: spec.template.metadata.labels is empty: unable to create pods, no labels",
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

// With DeferStatus, a plan whose only writes are scales leaves the status
// to the sync their events trigger; without it, the same plan writes it.
func TestSyncDeferStatus(t *testing.T) {
	_, s := settled(t, newDeployment(3, "web:v1"))
	d := s.Deployment.DeepCopy()
	d.Spec.Replicas = ptr(int32(5))
	d.Generation++
	s.Deployment = d
	eager, err := deployment.Sync(s, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if eager.UpdateStatus == nil {
		t.Fatalf("eager plan writes no status:\n%s", eager)
	}
	s.DeferStatus = true
	deferred, err := deployment.Sync(s, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if deferred.UpdateStatus != nil || len(deferred.Actions) != len(eager.Actions) {
		t.Errorf("deferred plan:\n%s\nwant the eager plan's actions without its status:\n%s", deferred, eager)
	}
}
