package deployment

import (
	"context"
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/worker"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// EventRules are the Deployment controller's informer event-handler rules
// (upstream DeploymentController's addDeployment … deletePod): which
// Deployments an add, update or delete of a Deployment, ReplicaSet or pod
// asks to sync, with the conventions of every ctrlkit controller's rules
// (see [reconcile.Enqueue]). The [Controller] applies them to its
// informers, and framework adapters (controller-runtime, client-go
// informers) to theirs.
//
// One addition to upstream, which only matters with a batch period: an
// update of a controlled ReplicaSet that changes neither its controller,
// generation, labels nor deletion timestamp (its status, its annotations)
// is marked [reconcile.Enqueue.Batch], and so is a pod deletion.
//
// The zero EventRules, without caches, still syncs the Deployment of a
// Deployment event, but resolves a ReplicaSet or pod event to no
// Deployment.
type EventRules struct {
	// Deployments reads the cached Deployments: by key to resolve a
	// controller reference, by namespace to find the Deployments that
	// select an orphan ReplicaSet. Nil reads as an empty cache, with an
	// error logged.
	Deployments reconcile.Reader[*appsv1.Deployment]
	// ReplicaSets reads the cached ReplicaSets, to find a deleted pod's
	// Deployment. Nil reads as an empty cache, with an error logged.
	ReplicaSets reconcile.Getter[*appsv1.ReplicaSet]
	// Kind is the kind that controller references must name to resolve;
	// "" means Deployment. A [Workload]'s rules set its kind, and read
	// Deployments through [WorkloadViews].
	Kind string
}

// DeploymentAdded syncs the Deployment.
func (r EventRules) DeploymentAdded(_ context.Context, d *appsv1.Deployment) []reconcile.Enqueue {
	if d == nil {
		return nil
	}
	return []reconcile.Enqueue{{Key: keyOf(d)}}
}

// DeploymentUpdated syncs the Deployment, on every update: resyncs (same
// resourceVersion) included, as upstream.
func (r EventRules) DeploymentUpdated(_ context.Context, old, cur *appsv1.Deployment) []reconcile.Enqueue {
	if old == nil || cur == nil {
		return nil
	}
	return []reconcile.Enqueue{{Key: keyOf(cur)}}
}

// DeploymentDeleted syncs the Deployment (the sync finds it gone).
func (r EventRules) DeploymentDeleted(_ context.Context, d *appsv1.Deployment) []reconcile.Enqueue {
	if d == nil {
		return nil
	}
	return []reconcile.Enqueue{{Key: keyOf(d)}}
}

// ReplicaSetAdded syncs the ReplicaSet's Deployment; an orphan, every
// Deployment whose selector matches its labels; a ReplicaSet that arrives
// being deleted counts as deleted.
func (r EventRules) ReplicaSetAdded(ctx context.Context, rs *appsv1.ReplicaSet) []reconcile.Enqueue {
	if rs == nil {
		return nil
	}
	if rs.DeletionTimestamp != nil {
		return r.ReplicaSetDeleted(ctx, rs)
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		return r.owner(ctx, rs.Namespace, ref, false, nil)
	}
	return r.selecting(ctx, rs, nil)
}

// ReplicaSetUpdated ignores resyncs (same resourceVersion). A changed
// controller reference syncs the old owner; then the current owner is
// synced, or, for an orphan whose labels or controller changed, every
// Deployment that selects it.
func (r EventRules) ReplicaSetUpdated(ctx context.Context, old, cur *appsv1.ReplicaSet) []reconcile.Enqueue {
	if old == nil || cur == nil || old.ResourceVersion == cur.ResourceVersion {
		return nil
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	var out []reconcile.Enqueue
	if refChanged && oldRef != nil {
		out = r.owner(ctx, old.Namespace, oldRef, false, out)
	}
	if curRef != nil {
		batch := !refChanged && old.Generation == cur.Generation && labels.Equals(old.Labels, cur.Labels) &&
			(old.DeletionTimestamp == nil) == (cur.DeletionTimestamp == nil)
		return r.owner(ctx, cur.Namespace, curRef, batch, out)
	}
	if refChanged || !reflect.DeepEqual(old.Labels, cur.Labels) {
		out = r.selecting(ctx, cur, out)
	}
	return out
}

// ReplicaSetDeleted syncs the deleted ReplicaSet's Deployment; orphans
// concern nobody.
func (r EventRules) ReplicaSetDeleted(ctx context.Context, rs *appsv1.ReplicaSet) []reconcile.Enqueue {
	if rs == nil {
		return nil
	}
	return r.owner(ctx, rs.Namespace, metav1.GetControllerOfNoCopy(rs), false, nil)
}

// PodDeleted syncs the Deployment of the pod's ReplicaSet if it uses the
// Recreate strategy (v1.37: on every such deletion), so that it creates the
// new ReplicaSet once the old pods are gone. The pod's controller must be a
// cached ReplicaSet with the referenced UID.
func (r EventRules) PodDeleted(ctx context.Context, pod *corev1.Pod) []reconcile.Enqueue {
	if pod == nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || noCache(ctx, r.ReplicaSets == nil, "ReplicaSets") {
		return nil
	}
	rs, err := r.ReplicaSets.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name})
	if err != nil || rs == nil || rs.UID != ref.UID {
		return nil
	}
	d := r.resolve(ctx, rs.Namespace, metav1.GetControllerOfNoCopy(rs))
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	return []reconcile.Enqueue{{Key: keyOf(d), Batch: true}}
}

// resolve returns the Deployment a controller reference points to, if it
// is cached with the same UID (upstream resolveControllerRef).
func (r EventRules) resolve(ctx context.Context, namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	kind := r.Kind
	if kind == "" {
		kind = controllerKind.Kind
	}
	if ref == nil || ref.Kind != kind || noCache(ctx, r.Deployments == nil, "Deployments") {
		return nil
	}
	d, _ := worker.Resolve(ctx, r.Deployments, namespace, ref, kind)
	return d
}

func (r EventRules) owner(ctx context.Context, namespace string, ref *metav1.OwnerReference, batch bool, out []reconcile.Enqueue) []reconcile.Enqueue {
	if d := r.resolve(ctx, namespace, ref); d != nil {
		out = append(out, reconcile.Enqueue{Key: keyOf(d), Batch: batch})
	}
	return out
}

// selecting appends every Deployment of rs's namespace whose non-empty
// selector matches rs's labels (upstream getDeploymentsForReplicaSet); a
// ReplicaSet without labels matches none.
func (r EventRules) selecting(ctx context.Context, rs *appsv1.ReplicaSet, out []reconcile.Enqueue) []reconcile.Enqueue {
	if len(rs.Labels) == 0 || noCache(ctx, r.Deployments == nil, "Deployments") {
		return out
	}
	ds, err := r.Deployments.List(ctx, rs.Namespace, labels.Everything())
	if err != nil {
		return out
	}
	for _, d := range ds {
		if d == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, reconcile.Enqueue{Key: keyOf(d)})
	}
	return out
}

// noCache reports whether the cache named field of an EventRules is
// missing (missing is true), logging an error if so.
func noCache(ctx context.Context, missing bool, field string) bool {
	if missing && ctx != nil {
		logr.FromContextOrDiscard(ctx).Error(fmt.Errorf("deployment: EventRules.%s is nil: the event resolves to no Deployment", field), "Cannot resolve event")
	}
	return missing
}
