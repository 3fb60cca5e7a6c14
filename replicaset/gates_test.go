package replicaset_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/features"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
	"github.com/ctrlkit/ctrlkit/internal/queuetest"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// With PodDeletionCost off the deletion ranking ignores the annotation,
// as upstream's ActivePodsWithRanks.Less skips rule 4 then: of a pod with
// cost 100 and an older one with cost 1000, the newer goes first; with the
// gate on, the cheaper.
func TestManageReplicasPodDeletionCostGate(t *testing.T) {
	rs := newRS("web", 1)
	older := newPod("older", ownedBy(rs), onNode("n1"), readySince(t0.Add(-2*time.Hour)), createdAt(t0.Add(-3*time.Hour)), withCost("100"))
	newer := newPod("newer", ownedBy(rs), onNode("n2"), readySince(t0.Add(-2*time.Hour)), createdAt(t0.Add(-time.Minute)), withCost("1000"))
	for _, tc := range []struct {
		gates features.Gates
		want  string
	}{
		{features.Gates{}, "older"},
		{features.Gates{PodDeletionCost: features.On}, "older"},
		{features.Gates{PodDeletionCost: features.Off}, "newer"},
	} {
		plan, err := replicaset.ManageReplicas(replicaset.Input{
			ReplicaSet: rs, Active: []*corev1.Pod{older, newer}, ExpectationsSatisfied: true, FeatureGates: tc.gates,
		}, t0)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := plan.Actions[0].(replicaset.DeletePods)
		if !ok || len(d.Pods) != 1 || d.Pods[0].Name != tc.want {
			t.Errorf("gates %q: plan %v; want to delete %s", tc.gates, plan.Actions, tc.want)
		}
		ranked, err := replicaset.RankForDeletionWith([]*corev1.Pod{older, newer}, nil, t0, tc.gates)
		if err != nil || ranked[0].Name != tc.want {
			t.Errorf("gates %q: RankForDeletionWith ranks %s first (%v); want %s", tc.gates, ranked[0].Name, err, tc.want)
		}
	}
	if _, err := replicaset.ManageReplicas(replicaset.Input{ReplicaSet: rs, FeatureGates: features.Gates{PodDeletionCost: 9}}, t0); err == nil {
		t.Errorf("ManageReplicas accepted a gate set to 9")
	}
}

// With DeploymentReplicaSetTerminatingReplicas off the status has no
// terminatingReplicas (nil, not 0), as upstream's calculateStatus writes
// it then; a count stored while the gate was on is cleared.
func TestCalculateStatusTerminatingGate(t *testing.T) {
	rs := newRS("web", 2)
	two := int32(2)
	rs.Status.TerminatingReplicas = &two
	active := []*corev1.Pod{newPod("a", ownedBy(rs)), newPod("b", ownedBy(rs))}
	terminating := []*corev1.Pod{newPod("c", ownedBy(rs))}
	on, err := replicaset.CalculateStatusWith(rs, active, terminating, nil, t0, features.Gates{})
	if err != nil || on.TerminatingReplicas == nil || *on.TerminatingReplicas != 1 {
		t.Fatalf("gate on: terminatingReplicas = %v (%v); want 1", on.TerminatingReplicas, err)
	}
	off, err := replicaset.CalculateStatusWith(rs, active, terminating, nil, t0, features.Gates{DeploymentReplicaSetTerminatingReplicas: features.Off})
	if err != nil || off.TerminatingReplicas != nil {
		t.Fatalf("gate off: terminatingReplicas = %v (%v); want nil", off.TerminatingReplicas, err)
	}
	if !replicaset.NeedsStatusUpdate(rs, &off) {
		t.Errorf("a status clearing terminatingReplicas=2 needs no update")
	}
}

// A running Reconciler switched off, on and off again: the status it
// writes follows the gate each time, and goes back to nil (kube-apiserver
// would keep a number written while the gate was on, since it only drops
// the field while the stored value is nil).
func TestReconcilerSwitchesTerminatingGate(t *testing.T) {
	w := newWorld(t0)
	w.graceful = true
	rs := w.addRS(newRS("web", 1))
	w.addPod(newPod("a", ownedBy(rs), onNode("n1"), readySince(t0.Add(-time.Hour))))
	w.addPod(newPod("b", ownedBy(rs), onNode("n2"), readySince(t0.Add(-time.Hour))))
	r := newReconciler(t, w, true)
	ctx := context.Background()
	k := keyOf(rs)
	if _, err := r.Reconcile(ctx, k); err != nil { // deletes one pod, which lingers
		t.Fatal(err)
	}
	terminating := func() *int32 { return w.rs(k).Status.TerminatingReplicas }
	for i, step := range []struct {
		gate features.Setting
		want *int32
	}{
		{features.Off, nil},
		{features.On, ptr(int32(1))},
		{features.Off, nil},
	} {
		if err := r.SetFeatureGates(features.Gates{DeploymentReplicaSetTerminatingReplicas: step.gate}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got := terminating(); (got == nil) != (step.want == nil) || got != nil && *got != *step.want {
			t.Errorf("step %d (gate %v): terminatingReplicas = %v; want %v", i, step.gate, deref(got), deref(step.want))
		}
	}
	if err := r.SetFeatureGates(features.Gates{PodDeletionCost: 5}); err == nil {
		t.Errorf("SetFeatureGates accepted a gate set to 5")
	}
	if r.FeatureGates().Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		t.Errorf("an invalid SetFeatureGates changed the gates")
	}
	if _, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{ReplicaSets: rsReader{w}, Pods: w.podLister(), Client: w,
		FeatureGates: features.Gates{StaleControllerConsistencyReplicaSet: -1}}); err == nil {
		t.Errorf("NewReconciler accepted a gate set to -1")
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int32) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// StaleControllerConsistencyReplicaSet switched off, on and off again on a
// running controller: on, a sync that would start from the version its
// own status write replaced is skipped until that write's event arrives
// (upstream waits for its informers the same way); off, the sync runs on
// the stale copy and its status write meets a Conflict (then succeeds on
// the fresh copy it reads), as upstream's does without the gate.
func TestControllerStaleConsistencyGate(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	for _, name := range []string{"a", "b"} {
		w.addPod(newPod(name, ownedBy(rs)))
	}
	rsw := fakewatch.New(w.clock, "ReplicaSet watch")
	done, skipped := queuetest.NewCounter(), new(atomic.Int64)
	r := startControllerWith(t, w, controllerOpts{
		rss: informer.ListWatchFuncs[*appsv1.ReplicaSet]{
			ListFunc:  w.rsSource().List,
			WatchFunc: func(context.Context, string) (watch.Interface, error) { return rsw, nil },
		},
		metrics: skipHook{done, skipped},
	})
	r.settle(t) // the first sync writes the status
	rsw.Modify(w.rs(key("web")))
	r.settle(t)
	ready := func(name string, ok bool) {
		status := corev1.ConditionFalse
		if ok {
			status = corev1.ConditionTrue
		}
		w.updatePod(key(name), func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0)}}
		})
		r.settle(t)
	}
	for i, gate := range []features.Setting{features.Off, features.On, features.Off} {
		if err := r.c.Reconciler().SetFeatureGates(features.Gates{StaleControllerConsistencyReplicaSet: gate}); err != nil {
			t.Fatal(err)
		}
		// A pod turns ready: the sync writes the status, whose event is
		// held back. The other pod's event then enqueues the ReplicaSet.
		ready("a", i%2 == 0)
		skipped0, statuses := skipped.Load(), w.statuses
		ready("b", i%2 == 0)
		skips, writes := skipped.Load()-skipped0, w.statuses-statuses
		switch gate {
		case features.On:
			if skips != 1 || writes != 0 {
				t.Errorf("step %d (gate on): %d syncs skipped, %d status writes; want 1 skipped, none written", i, skips, writes)
			}
		case features.Off:
			// The stale write (Conflict) and its retry on a fresh copy.
			if skips != 0 || writes != 2 {
				t.Errorf("step %d (gate off): %d syncs skipped, %d status writes; want none skipped, 2 written (a Conflict, then the retry)", i, skips, writes)
			}
		}
		// The last status write's event arrives.
		rsw.Modify(w.rs(key("web")))
		r.settle(t)
	}
}
