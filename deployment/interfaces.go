package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The readers a [Reconciler] takes are the shared ones of package
// reconcile ([reconcile.Getter], [reconcile.Lister],
// [reconcile.ByController]); [reconcile.FromCache] serves them from an
// informer cache. The writers below are the Deployment controller's own.

// ReplicaSetWriter creates, updates and deletes ReplicaSets through the
// API. Update must send the object's resourceVersion (a stale one fails
// with Conflict). Delete must fail (Conflict) if the ReplicaSet's UID is
// not uid.
type ReplicaSetWriter interface {
	CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error
}

// ReplicaSetPatcher patches ReplicaSets (adoption and release) and reads
// one from the API (to tell, after AlreadyExists, whether the existing
// ReplicaSet is the one the plan meant to create).
type ReplicaSetPatcher interface {
	PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error)
	GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)
}

// DeploymentWriter writes a Deployment (only rollbacks do) and its status
// subresource. Both must send the object's resourceVersion.
type DeploymentWriter interface {
	UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
}

// Client is everything [WritePlan] writes with.
type Client interface {
	ReplicaSetWriter
	ReplicaSetPatcher
	DeploymentWriter
}

// EventRecorder records events about Deployments; it is the one
// [reconcile.EventRecorder] of every ctrlkit controller. A nil
// EventRecorder discards events.
type EventRecorder = reconcile.EventRecorder

// EventRecorderFunc adapts a function to [EventRecorder].
type EventRecorderFunc = reconcile.EventRecorderFunc
