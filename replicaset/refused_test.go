package replicaset_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// quotaWorld is a world whose namespace has a ResourceQuota of limit pods,
// enforced as kube-apiserver's admission does: a create that would exceed
// it is refused with a Forbidden "exceeded quota" error. The ReplicaSet
// web (2 replicas) shares the namespace with another workload's pod, db,
// which holds one of the 2 pods allowed.
type quotaWorld struct {
	w  *world
	r  *running
	rs *appsv1.ReplicaSet
	// refusals are the times of the refused creates, in order.
	refusals []time.Time
}

func startQuotaWorld(t *testing.T) *quotaWorld {
	t.Helper()
	const limit = 2
	q := &quotaWorld{w: newWorld(t0)}
	q.rs = q.w.addRS(newRS("web", 2))
	q.w.addPod(newPod("db", withLabels(map[string]string{"app": "db"})))
	q.w.createErr = func(int) error { // with w.mu held
		used := 0
		for _, p := range q.w.pods {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				used++
			}
		}
		if used < limit {
			return nil
		}
		q.refusals = append(q.refusals, q.w.clock.Now())
		return apierrors.NewForbidden(podsGR, "web-x", fmt.Errorf("exceeded quota: pods, requested: pods=1, used: pods=%d, limited: pods=%d", used, limit))
	}
	q.r = startController(t, q.w)
	return q
}

// refused returns the number of refused creates and the time of the last.
func (q *quotaWorld) refused() (int, time.Time) {
	q.w.mu.Lock()
	defer q.w.mu.Unlock()
	if len(q.refusals) == 0 {
		return 0, time.Time{}
	}
	return len(q.refusals), q.refusals[len(q.refusals)-1]
}

// runUntil runs the clock until cond holds, at most max of virtual time.
func (q *quotaWorld) runUntil(t *testing.T, what string, cond func() bool, max time.Duration) {
	t.Helper()
	if err := q.w.clock.RunUntil(t.Context(), cond, max); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// A create refused by a quota makes the sync fail, and the controller
// retries it with the rate limiter's backoff (5 ms, doubling with each
// failed sync). A sync that an event triggers meanwhile, and that fails
// too, asks for a longer backoff, but it does not postpone the retry
// already scheduled: the retry comes when first due, as with client-go's
// work queue, and creates the pod as soon as the room it waits for is
// there. (ctrlkit's queue used to drop the scheduled retry when the event
// queued the key: the retry then waited for the last, doubled backoff. On
// a real kube-apiserver a rollout slowed by a quota took 43 s instead of
// kube-controller-manager's 3 s.)
func TestControllerRetriesARefusedCreateWhenFirstDue(t *testing.T) {
	q := startQuotaWorld(t)
	q.r.settle(t)
	if got := activeOwned(q.w, q.rs); len(got) != 1 {
		t.Fatalf("web has pods %v; want the 1 the quota allows", got)
	}

	// Retries on the backoff alone, until it is a second or more.
	times := func() []time.Time {
		q.w.mu.Lock()
		defer q.w.mu.Unlock()
		return append([]time.Time(nil), q.refusals...)
	}
	q.runUntil(t, "retries", func() bool {
		ts := times()
		return len(ts) >= 6 && ts[len(ts)-1].Sub(ts[len(ts)-2]) >= time.Second
	}, time.Hour)
	ts := times()
	chain, last := len(ts), ts[len(ts)-1]
	backoff := last.Sub(ts[len(ts)-2])
	for i := chain - 3; i >= chain-5; i-- {
		if gap := ts[i+1].Sub(ts[i]); gap*2 != ts[i+2].Sub(ts[i+1]) {
			t.Fatalf("refusals at %v: the retries do not double (%v then %v)", offsets(ts), gap, ts[i+2].Sub(ts[i+1]))
		}
	}
	retry := last.Add(2 * backoff) // the retry scheduled by the last failure

	// An event syncs web before that retry: the create is refused again,
	// and the limiter asks for a backoff twice as long.
	q.w.clock.SetTime(last.Add(backoff / 2))
	touched := q.w.rs(key("web")).DeepCopy()
	touched.Annotations = map[string]string{"touched": "yes"}
	q.w.addRS(touched)
	q.r.settle(t)
	if n, at := q.refused(); n != chain+1 || !at.Equal(last.Add(backoff/2)) {
		t.Fatalf("after the event: %d refusals, the last at %v; want %d, at %v", n, at.Sub(t0), chain+1, last.Add(backoff/2).Sub(t0))
	}

	// The other workload's pod goes: there is room, and nothing tells the
	// ReplicaSet controller (db is not its pod).
	q.w.clock.SetTime(last.Add(backoff))
	db := q.w.snapshot()[0]
	if db.Name != "db" {
		t.Fatalf("first pod %s; want db", db.Name)
	}
	if err := q.w.DeletePod(t.Context(), ns, "db", db.UID); err != nil {
		t.Fatal(err)
	}
	q.r.settle(t)
	if got := activeOwned(q.w, q.rs); len(got) != 1 {
		t.Fatalf("web has pods %v as db goes; want still 1: no event concerns web", got)
	}

	// The retry scheduled before the event comes when due, and creates
	// the pod; the event's longer backoff does not postpone it.
	var createdAt time.Time
	q.runUntil(t, "the second pod", func() bool {
		if len(activeOwned(q.w, q.rs)) == 2 {
			createdAt = q.w.clock.Now()
			return true
		}
		return false
	}, time.Hour)
	if !createdAt.Equal(retry) {
		t.Errorf("second pod created %v after the last refusal of the chain; want %v (the retry scheduled then), not %v (the event's backoff)",
			createdAt.Sub(last), retry.Sub(last), last.Add(backoff/2+4*backoff).Sub(last))
	}
	if n, _ := q.refused(); n != chain+1 {
		t.Errorf("%d refusals; want %d", n, chain+1)
	}
}

// offsets renders times as offsets from t0, for failure messages.
func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(t0)
	}
	return out
}
