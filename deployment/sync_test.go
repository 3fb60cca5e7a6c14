package deployment_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
