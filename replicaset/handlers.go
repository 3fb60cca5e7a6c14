package replicaset

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// EventRules are the ReplicaSet controller's informer event-handler rules
// (upstream ReplicaSetController's addRS … deletePod): which ReplicaSets
// an add, update or delete of a ReplicaSet or pod asks to sync, and which
// expectations it fulfils ([Observation]), with the conventions of every
// ctrlkit controller's rules (see [reconcile.Enqueue]; an event they cannot
// interpret asks for no keys and no observations). The [Controller]
// applies them to its informers, and framework adapters
// (controller-runtime, client-go informers) to theirs. An adapter that
// enqueues without recording the observations stalls every rollout step
// until [ExpectationsTimeout].
//
// Every pod event is marked [reconcile.Enqueue.Batch]: with a batch period
// a burst of them costs one sync. The zero EventRules, without a cache,
// has no ReplicaSets: ReplicaSet events still sync their own key, but a
// pod event resolves to no ReplicaSet and asks for nothing.
type EventRules struct {
	// ReplicaSets reads the cached ReplicaSets: by key to resolve a pod's
	// controller reference, by namespace to find the ReplicaSets that
	// select an orphan pod. Nil reads as an empty cache, with an error
	// logged.
	ReplicaSets reconcile.Reader[*appsv1.ReplicaSet]
}

// ObservationKind is what an [Observation] tells the expectations.
type ObservationKind int

const (
	// PodCreated: a pod the ReplicaSet controls was seen created
	// ([Expectations.CreationObserved]).
	PodCreated ObservationKind = iota + 1
	// PodDeleted: a pod the ReplicaSet controls was seen deleted or being
	// deleted ([Expectations.DeletionObserved], once per pod UID).
	PodDeleted
	// ReplicaSetGone: the ReplicaSet was deleted, or replaced by one with
	// another UID; its expectations go ([Expectations.Delete]).
	ReplicaSetGone
)

// Observation is an expectation change an informer event implies.
type Observation struct {
	// ReplicaSet is the key of the ReplicaSet whose expectations change.
	ReplicaSet types.NamespacedName
	Kind       ObservationKind
	// Pod is the UID of the deleted pod, for PodDeleted.
	Pod types.UID
}

// String returns e.g. "ns/web-1: pod created".
func (o Observation) String() string {
	switch o.Kind {
	case PodCreated:
		return o.ReplicaSet.String() + ": pod created"
	case PodDeleted:
		return o.ReplicaSet.String() + ": pod " + string(o.Pod) + " deleted"
	case ReplicaSetGone:
		return o.ReplicaSet.String() + ": gone"
	}
	return o.ReplicaSet.String() + ": unknown observation"
}

// Observe records observations in s, in order. A nil s records nothing.
func (s *Expectations) Observe(obs ...Observation) {
	for _, o := range obs {
		switch o.Kind {
		case PodCreated:
			s.CreationObserved(o.ReplicaSet)
		case PodDeleted:
			s.DeletionObserved(o.ReplicaSet, o.Pod)
		case ReplicaSetGone:
			s.Delete(o.ReplicaSet)
		}
	}
}

// ReplicaSetAdded syncs the ReplicaSet.
func (r EventRules) ReplicaSetAdded(_ context.Context, rs *appsv1.ReplicaSet) ([]reconcile.Enqueue, []Observation) {
	if rs == nil {
		return nil, nil
	}
	return []reconcile.Enqueue{{Key: rsKey(rs)}}, nil
}

// ReplicaSetUpdated syncs the ReplicaSet on every update (resyncs
// included, as upstream); a changed UID means it was deleted and recreated
// under the same name, so the old one counts as deleted first.
func (r EventRules) ReplicaSetUpdated(ctx context.Context, old, cur *appsv1.ReplicaSet) ([]reconcile.Enqueue, []Observation) {
	if old == nil || cur == nil {
		return nil, nil
	}
	var out []reconcile.Enqueue
	var obs []Observation
	if old.UID != cur.UID {
		out, obs = r.ReplicaSetDeleted(ctx, old)
	}
	return append(out, reconcile.Enqueue{Key: rsKey(cur)}), obs
}

// ReplicaSetDeleted drops the ReplicaSet's expectations and syncs its key
// (the sync finds it gone).
func (r EventRules) ReplicaSetDeleted(_ context.Context, rs *appsv1.ReplicaSet) ([]reconcile.Enqueue, []Observation) {
	if rs == nil {
		return nil, nil
	}
	key := rsKey(rs)
	return []reconcile.Enqueue{{Key: key}}, []Observation{{ReplicaSet: key, Kind: ReplicaSetGone}}
}

// PodAdded counts a new pod with a controller as an observed creation of
// its ReplicaSet and syncs it; an orphan syncs every ReplicaSet whose
// selector matches it (no expectation changes). A pod that arrives being
// deleted counts as deleted, not created.
func (r EventRules) PodAdded(ctx context.Context, pod *corev1.Pod) ([]reconcile.Enqueue, []Observation) {
	if pod == nil {
		return nil, nil
	}
	if pod.DeletionTimestamp != nil {
		return r.PodDeleted(ctx, pod)
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		rs := r.resolve(ctx, pod.Namespace, ref)
		if rs == nil {
			return nil, nil
		}
		key := rsKey(rs)
		return []reconcile.Enqueue{{Key: key, Batch: true}}, []Observation{{ReplicaSet: key, Kind: PodCreated}}
	}
	return r.selecting(ctx, pod, nil), nil
}

// PodUpdated ignores resyncs (same resourceVersion). A deletion timestamp
// counts as the deletion (of the old labels' owner too, if the labels
// changed). A changed controller reference syncs the old owner; then the
// current owner is synced, and again minReadySeconds later if the pod
// just turned ready; an orphan whose labels or controller changed syncs
// every ReplicaSet that selects it.
func (r EventRules) PodUpdated(ctx context.Context, old, cur *corev1.Pod) ([]reconcile.Enqueue, []Observation) {
	if old == nil || cur == nil || cur.ResourceVersion == old.ResourceVersion {
		return nil, nil
	}
	labelsChanged := !reflect.DeepEqual(cur.Labels, old.Labels)
	if cur.DeletionTimestamp != nil {
		out, obs := r.PodDeleted(ctx, cur)
		if labelsChanged {
			more, moreObs := r.PodDeleted(ctx, old)
			out, obs = append(out, more...), append(obs, moreObs...)
		}
		return out, obs
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	var out []reconcile.Enqueue
	if refChanged && oldRef != nil {
		if rs := r.resolve(ctx, old.Namespace, oldRef); rs != nil {
			out = append(out, reconcile.Enqueue{Key: rsKey(rs), Batch: true})
		}
	}
	if curRef != nil {
		rs := r.resolve(ctx, cur.Namespace, curRef)
		if rs == nil {
			return out, nil
		}
		out = append(out, reconcile.Enqueue{Key: rsKey(rs), Batch: true})
		if !IsPodReady(old) && IsPodReady(cur) && rs.Spec.MinReadySeconds > 0 {
			out = append(out, reconcile.Enqueue{Key: rsKey(rs), After: time.Duration(rs.Spec.MinReadySeconds) * time.Second})
		}
		return out, nil
	}
	if labelsChanged || refChanged {
		out = r.selecting(ctx, cur, out)
	}
	return out, nil
}

// PodDeleted counts the deletion of a pod with a controller (once per pod
// UID) and syncs its ReplicaSet. Orphans concern nobody.
func (r EventRules) PodDeleted(ctx context.Context, pod *corev1.Pod) ([]reconcile.Enqueue, []Observation) {
	if pod == nil {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil, nil
	}
	rs := r.resolve(ctx, pod.Namespace, ref)
	if rs == nil {
		return nil, nil
	}
	key := rsKey(rs)
	return []reconcile.Enqueue{{Key: key, Batch: true}}, []Observation{{ReplicaSet: key, Kind: PodDeleted, Pod: pod.UID}}
}

// errNoReplicaSets is logged by the rules of an EventRules without a cache
// when an event needs one.
var errNoReplicaSets = errors.New("replicaset: EventRules.ReplicaSets is nil: pod events resolve to no ReplicaSet")

// noCache reports whether r has no cache, logging errNoReplicaSets if so.
func (r EventRules) noCache(ctx context.Context) bool {
	if r.ReplicaSets != nil {
		return false
	}
	if ctx != nil {
		logr.FromContextOrDiscard(ctx).Error(errNoReplicaSets, "Cannot resolve pod event")
	}
	return true
}

// resolve returns the ReplicaSet ref points to in namespace, or nil when
// it is not a ReplicaSet, not cached, or another object (UID) (upstream
// resolveControllerRef).
func (r EventRules) resolve(ctx context.Context, namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != controllerKindName || r.noCache(ctx) {
		return nil
	}
	rs, _ := worker.Resolve(ctx, r.ReplicaSets, namespace, ref, controllerKindName)
	return rs
}

// selecting appends every ReplicaSet that selects the orphan pod
// (upstream getPodReplicaSets).
func (r EventRules) selecting(ctx context.Context, pod *corev1.Pod, out []reconcile.Enqueue) []reconcile.Enqueue {
	if r.noCache(ctx) {
		return out
	}
	rss, err := r.ReplicaSets.List(ctx, pod.Namespace, labels.Everything())
	if err != nil {
		return out
	}
	for _, rs := range podReplicaSets(pod, rss) {
		out = append(out, reconcile.Enqueue{Key: rsKey(rs), Batch: true})
	}
	return out
}
