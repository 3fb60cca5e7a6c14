package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// DeploymentGetter reads one Deployment. A missing Deployment is reported
// with an error for which apierrors.IsNotFound holds. An
// informer.Cache[*appsv1.Deployment] satisfies it; objects it returns are
// read-only.
type DeploymentGetter interface {
	Get(key types.NamespacedName) (*appsv1.Deployment, error)
}

// DeploymentGetterFunc adapts a function, e.g. a client-go lister call, to
// [DeploymentGetter].
type DeploymentGetterFunc func(key types.NamespacedName) (*appsv1.Deployment, error)

// Get calls f(key).
func (f DeploymentGetterFunc) Get(key types.NamespacedName) (*appsv1.Deployment, error) {
	return f(key)
}

// ReplicaSetLister lists the ReplicaSets of a namespace that match a
// selector. An informer.Cache[*appsv1.ReplicaSet] satisfies it; objects it
// returns are read-only.
type ReplicaSetLister interface {
	List(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error)
}

// ReplicaSetListerFunc adapts a function to [ReplicaSetLister].
type ReplicaSetListerFunc func(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error)

// List calls f(namespace, selector).
func (f ReplicaSetListerFunc) List(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return f(namespace, selector)
}

// PodIndexer returns the pods an index maps a value to. The Reconciler
// asks for the pods whose controller has a given UID, through
// informer.IndexControllerUID; an informer.Cache[*corev1.Pod] with that
// index satisfies it. Only Recreate Deployments need pods.
type PodIndexer interface {
	ByIndex(index, value string) ([]*corev1.Pod, error)
}

// PodIndexerFunc adapts a function to [PodIndexer].
type PodIndexerFunc func(index, value string) ([]*corev1.Pod, error)

// ByIndex calls f(index, value).
func (f PodIndexerFunc) ByIndex(index, value string) ([]*corev1.Pod, error) { return f(index, value) }

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

// Client is everything [Apply] writes with.
type Client interface {
	ReplicaSetWriter
	ReplicaSetPatcher
	DeploymentWriter
}

// EventRecorder records events; client-go's record.EventRecorder
// satisfies it. A nil EventRecorder discards events.
type EventRecorder interface {
	Event(obj runtime.Object, eventType, reason, message string)
}

// EventRecorderFunc adapts a function to [EventRecorder].
type EventRecorderFunc func(obj runtime.Object, eventType, reason, message string)

// Event calls f.
func (f EventRecorderFunc) Event(obj runtime.Object, eventType, reason, message string) {
	f(obj, eventType, reason, message)
}

var (
	_ DeploymentGetter = DeploymentGetterFunc(nil)
	_ ReplicaSetLister = ReplicaSetListerFunc(nil)
	_ PodIndexer       = PodIndexerFunc(nil)
	_ EventRecorder    = EventRecorderFunc(nil)
)
