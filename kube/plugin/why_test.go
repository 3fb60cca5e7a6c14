package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/rollout"
)

func codes(cs []Cause) []CauseCode {
	var out []CauseCode
	for _, c := range cs {
		out = append(out, c.Code)
	}
	return out
}

func TestWhy(t *testing.T) {
	tests := []struct {
		name  string
		build func() *State
		state RolloutState
		codes []CauseCode
		// text must appear in the text output.
		text []string
	}{
		{
			name:  "bad image",
			build: func() *State { return stuckImage().state() },
			state: Stuck, codes: []CauseCode{ImagePullBackOff},
			text: []string{"2 pods cannot pull image \"nginx:nope\"", "pod/web-", "ImagePullBackOff: Back-off pulling image",
				"MinAvailableLimit: old replica sets cannot scale down: 3 available ≤ 3 minimum", "kubectl rollout undo deployment/web"},
		},
		{
			name: "crash loop with its exit reason",
			build: func() *State {
				w := newWorld(4, 3, 2, "app:2")
				for i := range 3 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				w.pod(w.new, 0, crashing)
				w.pod(w.new, 1, crashing)
				return w.state()
			},
			state: Stuck, codes: []CauseCode{CrashLoopBackOff},
			text: []string{"2 pods crash-looping (container app)", "restarted 4 times; last exit code 137 (OOMKilled)"},
		},
		{
			name: "unschedulable with the scheduler's message",
			build: func() *State {
				w := newWorld(4, 3, 2, "app:2")
				for i := range 3 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				w.pod(w.new, 0, unschedulable)
				w.pod(w.new, 1, readyFor(time.Minute))
				return w.state()
			},
			state: Stuck, codes: []CauseCode{Unschedulable},
			text: []string{"1 pod unschedulable", "0/3 nodes are available: 3 Insufficient cpu."},
		},
		{
			name: "readiness probe failing, from the kubelet's event",
			build: func() *State {
				w := newWorld(4, 3, 2, "app:2")
				for i := range 3 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				p := w.pod(w.new, 0, runningNotReady)
				w.pod(w.new, 1, runningNotReady)
				st := w.state()
				st.Events = []*corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name}, Reason: "Unhealthy",
					Type: "Warning", Message: "Readiness probe failed: HTTP probe failed with statuscode: 503"}}
				return st
			},
			state: Stuck, codes: []CauseCode{ReadinessFailing},
			text: []string{"1 pod failing readiness", "statuscode: 503"},
		},
		{
			name: "a pod that is only starting is not a cause",
			build: func() *State {
				w := newWorld(4, 3, 2, "app:2")
				for i := range 3 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				w.pod(w.new, 0, runningNotReady)
				w.pod(w.new, 1, runningNotReady)
				return w.state()
			},
			state: Progressing,
		},
		{
			name: "quota exceeded",
			build: func() *State {
				w := newWorld(4, 3, 2, "app:2")
				for i := range 3 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				w.pod(w.new, 0, readyFor(time.Minute))
				w.new.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
					Message: `pods "web-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4`}}
				return w.state()
			},
			state: Stuck, codes: []CauseCode{QuotaExceeded},
			text: []string{"a ResourceQuota rejects the pods of web-", "(1 missing)", "limited: pods=4"},
		},
		{
			name: "paused",
			build: func() *State {
				w := newWorld(4, 4, 0, "app:2")
				for i := range 4 {
					w.pod(w.old, i, readyFor(time.Hour))
				}
				w.d.Spec.Paused = true
				return w.state()
			},
			state: Stuck, codes: []CauseCode{Paused},
			text: []string{"kubectl rollout resume deployment/web"},
		},
		{
			name: "progress deadline exceeded",
			build: func() *State {
				w := stuckImage()
				w.d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-x" has timed out progressing.`, LastUpdateTime: ago(2 * time.Minute)}
				return w.state()
			},
			state: Stuck, codes: []CauseCode{DeadlineExceeded, ImagePullBackOff},
			text: []string{"no progress for 600s: the progress deadline passed 2m0s ago"},
		},
		{
			name: "terminating pod held by a finalizer",
			build: func() *State {
				w := newWorld(2, 0, 2, "app:2")
				w.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				p := w.pod(w.old, 0, readyFor(time.Hour))
				p.DeletionTimestamp, p.Finalizers = ptr(ago(time.Minute)), []string{"example.com/hold"}
				return w.state()
			},
			state: Stuck, codes: []CauseCode{StuckTerminating},
			text: []string{"terminating past their grace period", "finalizers example.com/hold hold it", "OldPodsRunning"},
		},
		{
			name: "complete, with a PDB that allows no disruption",
			build: func() *State {
				w := newWorld(3, 0, 3, "app:2")
				for i := range 3 {
					w.pod(w.new, i, readyFor(time.Minute))
				}
				st := w.state()
				w.d.Status.Conditions[0].Reason = "NewReplicaSetAvailable"
				w.d.Status.Replicas, w.d.Status.UpdatedReplicas = 3, 3
				min := intstr.FromInt32(3)
				st.PDBs = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "web-pdb"},
					Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: w.d.Spec.Selector}}}
				return st
			},
			state: Complete, codes: []CauseCode{DisruptionBudget},
			text: []string{"PodDisruptionBudget web-pdb allows 0 disruptions (3 healthy, 3 required)"},
		},
		{
			name: "selector overlap with another deployment, orphaned replica set",
			build: func() *State {
				w := stuckImage()
				st := w.state()
				other := w.d.DeepCopy()
				other.Name, other.UID = "web-canary", "other"
				orphan := w.old.DeepCopy()
				orphan.Name, orphan.UID, orphan.OwnerReferences = "web-orphan", "orphan", nil
				st.Deployments = []*appsv1.Deployment{other}
				st.ReplicaSets = append(st.ReplicaSets, orphan)
				return st
			},
			state: Stuck, codes: []CauseCode{ImagePullBackOff, OrphanedReplicaSet, SelectorOverlap},
			text: []string{"deployment web-canary has an overlapping selector", "ReplicaSet web-orphan matches the selector but no controller owns it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.build()
			r := Why(st, now, Thresholds{})
			var b strings.Builder
			if err := Write(&b, Text, r); err != nil {
				t.Fatal(err)
			}
			checkUnblock(t, r, b.String())
			if r.State != tt.state {
				t.Errorf("state = %s; want %s\n%s", r.State, tt.state, b.String())
			}
			if diff := cmp.Diff(tt.codes, codes(r.Causes)); diff != "" {
				t.Errorf("causes mismatch (-want +got):\n%s\n%s", diff, b.String())
			}
			for _, s := range tt.text {
				if !strings.Contains(b.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, b.String())
				}
			}
		})
	}
}

func TestWhyHashCollision(t *testing.T) {
	w := stuckImage()
	cc := int32(1)
	w.d.Status.CollisionCount = &cc
	// The name for collision count 0 is held by a ReplicaSet of another
	// template; the controller moved to the name for count 1.
	squatter := w.new.DeepCopy()
	squatter.UID = "squatter"
	squatter.Name = collisionNames(w.d)[0]
	if want := rollout.ReplicaSetName("web", rollout.ComputeHash(&w.d.Spec.Template, nil)); squatter.Name != want {
		t.Fatalf("name for no collision = %s; want %s (the controller hashes a nil count)", squatter.Name, want)
	}
	squatter.Spec.Template.Spec.Containers[0].Image = "someone:else"
	squatter.OwnerReferences = nil
	w.new.Name = collisionNames(w.d)[1]
	st := w.state()
	st.ReplicaSets = append(st.ReplicaSets, squatter)
	r := Why(st, now, Thresholds{})
	if diff := cmp.Diff([]CauseCode{ImagePullBackOff, HashCollision}, codes(r.Causes)); diff != "" {
		t.Fatalf("causes mismatch (-want +got):\n%s", diff)
	}
	if c := r.Causes[1]; c.Severity != Warning || !strings.Contains(c.Message, "moved on to "+w.new.Name) {
		t.Errorf("collision cause = %+v", c)
	}
}
