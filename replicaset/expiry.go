package replicaset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file is the deliberate difference for kubernetes#129795: upstream
// takes an expectation that expired (five minutes without seeing the
// creations or deletions it waits for) for satisfied, and decides on its
// cache; when the pod informer lags more than that, the cache still lacks
// the pods the controller created, and it creates them again. Before it
// trusts an expired expectation, the Reconciler reads the pods it is
// waiting for from the API server: if the API server has a pod it created
// that its cache lacks, or has deleted (or is deleting) a pod its cache
// still shows running, the cache is behind its own writes and the
// expectation is renewed for another [ExpectationsTimeout]. If not (the
// writes never happened, or their pods are gone), the expiry is trusted,
// as upstream trusts it.

// writtenPods are, per ReplicaSet, the pods (UID → name) the last round of
// creations made. Safe for concurrent use.
type writtenPods struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[types.UID]string
}

// set replaces the record of key with pods (none: forgets key).
func (w *writtenPods) set(key types.NamespacedName, pods []*corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(pods) == 0 {
		delete(w.m, key)
		return
	}
	if w.m == nil {
		w.m = map[types.NamespacedName]map[types.UID]string{}
	}
	rec := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		rec[p.UID] = p.Name
	}
	w.m[key] = rec
}

func (w *writtenPods) get(key types.NamespacedName) map[types.UID]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.m[key])
}

func (w *writtenPods) forget(key types.NamespacedName) { w.set(key, nil) }

// expiredUnobserved reports whether the expectation x (ok: one is
// recorded) has expired at now with creations or deletions still
// unobserved: the case upstream trusts blindly.
func (r *Reconciler) expiredUnobserved(x Expectation, ok bool, now time.Time) bool {
	return ok && !r.trustExpired && !x.Fulfilled() && x.Expired(now)
}

// cacheBehind reports whether the pod cache of a ReplicaSet whose
// expectation expired is behind this controller's own writes, by live
// reads of the pods the expectation waits for: a pod the last round
// created that the API server has (still controlled by rs) and the cache
// does not, or a pod it deleted that the cache shows active while the API
// server has it gone or terminating. seen are the pods the cache holds for
// rs (active and terminating). A failed read is returned: the sync fails
// and is retried with backoff.
func (r *Reconciler) cacheBehind(ctx context.Context, key types.NamespacedName, rsUID types.UID, seen ...[]*corev1.Pod) (bool, string, error) {
	live, ok := r.client.(PodGetter)
	if !ok {
		return false, "", nil
	}
	cached := map[types.UID]*corev1.Pod{}
	for _, list := range seen {
		for _, p := range list {
			cached[p.UID] = p
		}
	}
	created := r.written.get(key)
	uids := slices.Sorted(maps.Keys(created)) // a fixed order: the same reads on every run
	for _, uid := range uids {
		if _, ok := cached[uid]; ok {
			continue
		}
		name := created[uid]
		p, err := live.GetPod(ctx, key.Namespace, name)
		switch {
		case apierrors.IsNotFound(err):
			continue // created, then deleted: nothing to wait for
		case err != nil:
			return false, "", fmt.Errorf("reading pod %s, created %v ago and not in the cache: %w", name, ExpectationsTimeout, err)
		case p != nil && p.UID == uid && controlledBy(p, rsUID):
			return true, fmt.Sprintf("pod %s, which this controller created, is on the API server but not in its cache", name), nil
		}
	}
	for _, uid := range r.exp.PendingDeletions(key) {
		p, ok := cached[uid]
		if !ok || p.DeletionTimestamp != nil {
			continue // the cache has seen it go, or go away
		}
		cur, err := live.GetPod(ctx, p.Namespace, p.Name)
		switch {
		case apierrors.IsNotFound(err):
			return true, fmt.Sprintf("pod %s, which this controller deleted, is gone from the API server but active in its cache", p.Name), nil
		case err != nil:
			return false, "", fmt.Errorf("reading pod %s, deleted %v ago and active in the cache: %w", p.Name, ExpectationsTimeout, err)
		case cur != nil && (cur.UID != uid || cur.DeletionTimestamp != nil):
			return true, fmt.Sprintf("pod %s, which this controller deleted, is being deleted on the API server but active in its cache", p.Name), nil
		}
	}
	return false, "", nil
}

// controlledBy reports whether p's controller reference names uid.
func controlledBy(p *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	return ref != nil && ref.UID == uid
}

// ReasonExpectationsRenewed is the reason of the event a ReplicaSet gets
// when an expired expectation is renewed because the controller's cache
// is behind its own writes (see [ReconcilerConfig.TrustExpiredExpectations]).
const ReasonExpectationsRenewed = "ExpectationsRenewed"
