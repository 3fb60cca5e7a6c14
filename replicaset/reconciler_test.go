package replicaset_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// newReconciler wires a Reconciler to w. With observe set, pod changes in
// w are reported to the expectations the way the Controller's handlers do.
func newReconciler(t *testing.T, w *world, observe bool) *replicaset.Reconciler {
	t.Helper()
	r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: rsReader{w}, Pods: w.podLister(),
		Client: w, Events: w, Clock: w.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	if observe {
		w.observers = append(w.observers, func(old, cur *corev1.Pod) {
			observeExpectations(r.Expectations(), old, cur)
		})
	}
	return r
}

func observeExpectations(e *replicaset.Expectations, old, cur *corev1.Pod) {
	p := cur
	if p == nil {
		p = old
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return
	}
	k := types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}
	switch {
	case old == nil && cur.DeletionTimestamp == nil:
		e.CreationObserved(k)
	case cur == nil || (cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil):
		e.DeletionObserved(k, p.UID)
	}
}

// activeOwned returns the names of the active pods rs controls in w.
func activeOwned(w *world, rs *appsv1.ReplicaSet) []string {
	var out []string
	for _, p := range w.snapshot() {
		if replicaset.IsPodActive(p) && metav1.IsControlledBy(p, rs) {
			out = append(out, p.Name)
		}
	}
	return out
}

func syncKey(t *testing.T, r *replicaset.Reconciler, name string) (reconcile.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), key(name))
}

func TestReconcileCreatesThenSettles(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 3))
	r := newReconciler(t, w, true)

	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatal(err)
	}
	if got := activeOwned(w, rs); len(got) != 3 {
		t.Fatalf("after the first sync the world has %v; want 3 pods", got)
	}
	wantEvents := []string{"Normal SuccessfulCreate Created pod: web-p001", "Normal SuccessfulCreate Created pod: web-p002", "Normal SuccessfulCreate Created pod: web-p003"}
	gotEvents := w.takeEvents()
	if diff := cmp.Diff(wantEvents, sortedCopy(gotEvents)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatal(err)
	}
	if got := w.rs(key("web")).Status; got.Replicas != 3 || got.FullyLabeledReplicas != 3 || got.ObservedGeneration != 1 {
		t.Errorf("status after the second sync = %+v; want 3 replicas at generation 1", got)
	}
	writes := w.statuses
	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatal(err)
	}
	if w.statuses != writes || w.creates != 3 {
		t.Errorf("a settled sync wrote: %d status updates, %d creates; want %d, 3", w.statuses, w.creates, writes)
	}
}

func TestReconcileSlowStartStopsOnFailure(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 10))
	quota := apierrors.NewForbidden(podsGR, "", errors.New("exceeded quota"))
	w.createErr = func(n int) error {
		if n == 4 { // the first call of the third batch (1, 2, 4, 3)
			return quota
		}
		return nil
	}
	r := newReconciler(t, w, false)

	_, err := syncKey(t, r, "web")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "default/web") {
		t.Fatalf("Reconcile error = %v; want the Forbidden error, wrapped with the key", err)
	}
	if w.creates != 7 {
		t.Errorf("create calls = %d; want 7 (batches 1, 2, 4; the last batch of 3 skipped)", w.creates)
	}
	if got := activeOwned(w, rs); len(got) != 6 {
		t.Errorf("world has %d pods; want 6", len(got))
	}
	// 10 expected, 4 never made: 6 creations remain to be observed.
	if got, _ := r.Expectations().Get(key("web")); got.Add != 6 || got.Del != 0 {
		t.Errorf("expectations = %+v; want Add 6, Del 0", got)
	}
	st := w.rs(key("web")).Status
	if len(st.Conditions) != 1 || st.Conditions[0].Reason != replicaset.ReasonFailedCreate ||
		!strings.Contains(st.Conditions[0].Message, "exceeded quota") || !st.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("status conditions = %+v; want one FailedCreate condition at t0", st.Conditions)
	}
	if n := countPrefix(w.takeEvents(), "Warning FailedCreate"); n != 1 {
		t.Errorf("FailedCreate events = %d; want 1", n)
	}
}

func TestReconcileNamespaceTerminating(t *testing.T) {
	w := newWorld(t0)
	w.addRS(newRS("web", 3))
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	w.createErr = func(int) error { return terminating }
	r := newReconciler(t, w, false)
	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatalf("Reconcile error = %v; want nil (namespace terminating is ignored)", err)
	}
	if w.creates != 3 {
		t.Errorf("create calls = %d; want 3 (the failures count as successes)", w.creates)
	}
	if ev := w.takeEvents(); len(ev) != 0 {
		t.Errorf("events = %v; want none", ev)
	}
}

func TestReconcileStatusRetry(t *testing.T) {
	conflict := apierrors.NewConflict(rssGR, "web", errors.New("injected"))
	cases := []struct {
		name      string
		failures  int
		wantErr   bool
		wantCalls int
	}{
		{name: "first write fails, retry succeeds", failures: 1, wantCalls: 2},
		{name: "both writes fail", failures: 2, wantErr: true, wantCalls: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t0)
			w.addRS(newRS("web", 0, func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }))
			w.statusErr = func(n int) error {
				if n <= tc.failures {
					return conflict
				}
				return nil
			}
			r := newReconciler(t, w, false)
			_, err := syncKey(t, r, "web")
			if (err != nil) != tc.wantErr || (err != nil && !apierrors.IsConflict(err)) {
				t.Errorf("Reconcile error = %v; want a Conflict: %v", err, tc.wantErr)
			}
			if w.statuses != tc.wantCalls {
				t.Errorf("status writes = %d; want %d", w.statuses, tc.wantCalls)
			}
			if got := w.rs(key("web")).Status.ObservedGeneration; (got == 2) == tc.wantErr {
				t.Errorf("stored observedGeneration = %d (write failed: %v)", got, tc.wantErr)
			}
		})
	}
}

// staleReader serves an out-of-date ReplicaSet, as a lagging cache would.
type staleReader struct {
	rsReader
	stale *appsv1.ReplicaSet
}

func (s staleReader) Get(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return s.stale, nil
}

func TestReconcileStaleCacheConflictsThenRetries(t *testing.T) {
	w := newWorld(t0)
	stale := w.addRS(newRS("web", 0, func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }))
	w.addRS(stale) // someone else wrote: the stored resourceVersion moves on
	r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: staleReader{rsReader{w}, stale}, Pods: w.podLister(), Client: w,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), key("web")); err != nil {
		t.Fatalf("Reconcile error = %v; want the retry on a fresh copy to succeed", err)
	}
	if got := w.rs(key("web")).Status.ObservedGeneration; got != 2 || w.statuses != 2 {
		t.Errorf("observedGeneration = %d after %d writes; want 2 after 2", got, w.statuses)
	}
}

// TestReconcileDeletesSurplus deletes the two least valuable of four pods,
// with upstream's status timing (EagerStatus: the status counted before the
// deletes is written at once) and with ours (the status waits for the
// deletions' sync, which counts them).
func TestReconcileDeletesSurplus(t *testing.T) {
	for _, eager := range []bool{true, false} {
		t.Run(fmt.Sprintf("eager=%v", eager), func(t *testing.T) {
			w := newWorld(t0)
			w.graceful = true
			rs := w.addRS(newRS("web", 2, func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }))
			for _, p := range []*corev1.Pod{
				newPod("ready-old", ownedBy(rs), onNode("n1"), readySince(t0.Add(-time.Hour))),
				newPod("ready-new", ownedBy(rs), onNode("n1"), readySince(t0.Add(-time.Second))),
				newPod("unready", ownedBy(rs), onNode("n1")),
				newPod("unscheduled", ownedBy(rs)),
			} {
				w.addPod(p)
			}
			r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
				ReplicaSets: rsReader{w}, Pods: w.podLister(),
				Client: w, Events: w, Clock: w.clock, EagerStatus: eager,
			})
			if err != nil {
				t.Fatal(err)
			}
			before := w.rs(key("web")).Status
			res, err := syncKey(t, r, "web")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ready-new", "ready-old"}, activeOwned(w, rs)); diff != "" {
				t.Errorf("surviving pods mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]types.UID{"uid-unready", "uid-unscheduled"}, r.Expectations().PendingDeletions(key("web"))); diff != "" {
				t.Errorf("pending deletions mismatch (-want +got):\n%s", diff)
			}
			got := w.rs(key("web")).Status
			if eager {
				if got.Replicas != 4 || *got.TerminatingReplicas != 0 || got.ObservedGeneration != 2 || w.statuses != 1 {
					t.Errorf("status = %+v after %d writes; want 4 replicas (counted before the deletes), 0 terminating, generation 2, 1 write", got, w.statuses)
				}
			} else {
				if diff := cmp.Diff(before, got); w.statuses != 0 || diff != "" {
					t.Errorf("%d status writes, status changed (-before +after):\n%s\nwant none: the deletions' events sync again", w.statuses, diff)
				}
				if want := replicaset.ExpectationsTimeout + time.Second; res.RequeueAfter != want {
					t.Errorf("RequeueAfter = %v; want %v, in case the deletions' events are lost", res.RequeueAfter, want)
				}
			}
			// The next sync waits for the deletions and, while they are
			// unobserved, writes the counts it sees but does not advance
			// observedGeneration (deviation: upstream does, from a pod
			// cache behind its own deletes).
			observed := w.rs(key("web")).Status.ObservedGeneration
			if _, err := syncKey(t, r, "web"); err != nil {
				t.Fatal(err)
			}
			if got := w.rs(key("web")).Status; got.ObservedGeneration != observed || got.Replicas != 2 || *got.TerminatingReplicas != 2 {
				t.Errorf("after a sync with unobserved deletions, status = %+v; want 2 replicas, 2 terminating, observedGeneration still %d", got, observed)
			}
			// Once observed, the next sync accounts for the generation.
			for _, uid := range r.Expectations().PendingDeletions(key("web")) {
				r.Expectations().DeletionObserved(key("web"), uid)
			}
			if _, err := syncKey(t, r, "web"); err != nil {
				t.Fatal(err)
			}
			if got := w.rs(key("web")).Status; got.Replicas != 2 || *got.TerminatingReplicas != 2 || got.ObservedGeneration != 2 || w.statuses != 2 {
				t.Errorf("status = %+v after %d writes; want 2 replicas, 2 terminating, generation 2 after 2", got, w.statuses)
			}
		})
	}
}

func TestReconcileDeleteFailure(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 1))
	for _, n := range []string{"a", "b", "c"} {
		w.addPod(newPod(n, ownedBy(rs), onNode("n1"), createdAt(t0.Add(-time.Duration(n[0])*time.Hour))))
	}
	w.deleteErr = func(p *corev1.Pod) error {
		if p.Name == "a" {
			return apierrors.NewInternalError(errors.New("etcd down"))
		}
		return nil
	}
	r := newReconciler(t, w, false)
	_, err := syncKey(t, r, "web")
	if !apierrors.IsInternalError(err) {
		t.Fatalf("Reconcile error = %v; want the InternalError", err)
	}
	// a and b (same age bucket, lowest UIDs) were chosen; a's deletion
	// failed, so it is no longer awaited; b's still is.
	if diff := cmp.Diff([]types.UID{"uid-b"}, r.Expectations().PendingDeletions(key("web"))); diff != "" {
		t.Errorf("pending deletions mismatch (-want +got):\n%s", diff)
	}
	if got, _ := r.Expectations().Get(key("web")); got.Del != 1 {
		t.Errorf("expected deletions = %d; want 1", got.Del)
	}
	// The condition's message is upstream's text (users' alerts match it).
	st := w.rs(key("web")).Status
	want := []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: replicaset.ReasonFailedDelete, Message: "unable to delete pods: Internal error occurred: etcd down",
		LastTransitionTime: metav1.NewTime(t0)}}
	if diff := cmp.Diff(want, st.Conditions); diff != "" {
		t.Errorf("conditions mismatch (-want +got):\n%s", diff)
	}
}

func TestReconcileNotFoundDropsExpectations(t *testing.T) {
	w := newWorld(t0)
	r := newReconciler(t, w, false)
	r.Expectations().ExpectCreations(key("gone"), 3, t0)
	if _, err := syncKey(t, r, "gone"); err != nil {
		t.Fatalf("Reconcile(missing) error = %v; want nil", err)
	}
	if _, ok := r.Expectations().Get(key("gone")); ok {
		t.Error("expectations of a deleted ReplicaSet were kept")
	}
}

func TestReconcileClaims(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 2))
	other := newRS("other", 1)
	match := withLabels(map[string]string{"app": "web"})
	for _, p := range []*corev1.Pod{
		newPod("orphan", match),
		newPod("strayed", ownedBy(rs), withLabels(map[string]string{"app": "db"})),
		newPod("theirs", ownedBy(other), match),
		newPod("orphan-terminating", match, deletingAt(t0)),
		newPod("mine-terminating", ownedBy(rs), deletingAt(t0)),
		newPod("mine", ownedBy(rs)),
	} {
		w.addPod(p)
	}
	r := newReconciler(t, w, true)
	if _, err := syncKey(t, r, "web"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mine", "orphan"}, activeOwned(w, rs)); diff != "" {
		t.Errorf("owned pods mismatch (-want +got):\n%s", diff)
	}
	for _, p := range w.snapshot() {
		ref := metav1.GetControllerOf(p)
		switch p.Name {
		case "strayed", "orphan-terminating":
			if ref != nil {
				t.Errorf("pod %s has controller %s; want none", p.Name, ref.Name)
			}
		case "theirs":
			if ref == nil || ref.UID != other.UID {
				t.Errorf("pod theirs lost its owner")
			}
		}
	}
	if st := w.rs(key("web")).Status; st.Replicas != 2 || *st.TerminatingReplicas != 1 {
		t.Errorf("status = replicas %d, terminating %d; want 2, 1", st.Replicas, *st.TerminatingReplicas)
	}
}

func TestReconcileNoAdoptionWhenOwnerIsBeingDeleted(t *testing.T) {
	w := newWorld(t0)
	cached := w.addRS(newRS("web", 1))
	live := cached.DeepCopy()
	live.DeletionTimestamp = &metav1.Time{Time: t0}
	w.addRS(live)
	w.addPod(newPod("orphan", withLabels(map[string]string{"app": "web"})))
	r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: staleReader{rsReader{w}, cached}, Pods: w.podLister(), Client: w,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Reconcile(context.Background(), key("web"))
	if err == nil || !strings.Contains(err.Error(), "has just been deleted") {
		t.Fatalf("Reconcile error = %v; want the adoption refused", err)
	}
	if ref := metav1.GetControllerOf(w.snapshot()[0]); ref != nil {
		t.Errorf("orphan was adopted by %s", ref.Name)
	}
}

func TestReconcileRequeuesForAvailability(t *testing.T) {
	w := newWorld(t0)
	rs := w.addRS(newRS("web", 1, func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = 30 }))
	w.addPod(newPod("a", ownedBy(rs), readySince(t0.Add(-10*time.Second))))
	r := newReconciler(t, w, false)
	res, err := syncKey(t, r, "web")
	if err != nil || res.RequeueAfter != 20*time.Second {
		t.Errorf("Reconcile = %+v, %v; want RequeueAfter 20s", res, err)
	}
	w.clock.Step(20 * time.Second)
	res, err = syncKey(t, r, "web")
	if err != nil || res.RequeueAfter != 0 || w.rs(key("web")).Status.AvailableReplicas != 1 {
		t.Errorf("Reconcile at +20s = %+v, %v, available %d; want no requeue, 1 available", res, err, w.rs(key("web")).Status.AvailableReplicas)
	}
}

func TestNewReconcilerValidates(t *testing.T) {
	w := newWorld(t0)
	for _, cfg := range []replicaset.ReconcilerConfig{
		{Pods: w.podLister(), Client: w},
		{ReplicaSets: rsReader{w}, Client: w},
		{ReplicaSets: rsReader{w}, Pods: w.podLister()},
		{ReplicaSets: rsReader{w}, Pods: w.podLister(), Client: w, BurstReplicas: -1},
	} {
		if _, err := replicaset.NewReconciler(cfg); err == nil {
			t.Errorf("NewReconciler(%+v) = nil error; want one", cfg)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func countPrefix(s []string, prefix string) int {
	n := 0
	for _, e := range s {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// A ReplicaSet the API server would have rejected (no selector, an empty
// one, no template labels, a selector its template does not match) is a
// terminal error: no pod is created, no status written.
func TestReconcileRefusesAnInvalidSpec(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*appsv1.ReplicaSet)
		want   string
	}{
		{"nil selector", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil }, "spec.selector is nil"},
		{"empty selector", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector is empty"},
		{"no template labels", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = nil }, "labels is empty"},
		{"selector does not match the template", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Labels = map[string]string{"app": "other"}
		}, "does not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t0)
			rs := newRS("web", 3)
			tc.modify(rs)
			w.addRS(rs)
			r := newReconciler(t, w, true)
			_, err := syncKey(t, r, "web")
			if err == nil || !errors.Is(err, reconcile.ErrTerminal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reconcile() = %v; want a terminal error containing %q", err, tc.want)
			}
			if tc.name == "no template labels" && !errors.Is(err, replicaset.ErrNoLabels) {
				t.Errorf("Reconcile() = %v; want it to wrap ErrNoLabels", err)
			}
			if w.creates != 0 || w.statuses != 0 {
				t.Errorf("Reconcile wrote %d creates and %d statuses; want none", w.creates, w.statuses)
			}
		})
	}
}
