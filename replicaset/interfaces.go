package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The interfaces below are what the [Reconciler] consumes. Readers return
// shared, read-only objects (an informer cache, for instance): the
// Reconciler never modifies what they return. informer.Cache[T] satisfies
// the readers directly; a client-go lister needs a one-line Func adapter.

// ReplicaSetGetter reads one ReplicaSet. A missing object is reported with
// an error for which apierrors.IsNotFound is true.
type ReplicaSetGetter interface {
	Get(key types.NamespacedName) (*appsv1.ReplicaSet, error)
}

// ReplicaSetGetterFunc adapts a function to [ReplicaSetGetter].
type ReplicaSetGetterFunc func(key types.NamespacedName) (*appsv1.ReplicaSet, error)

// Get calls f.
func (f ReplicaSetGetterFunc) Get(key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return f(key)
}

// ReplicaSetLister lists the ReplicaSets of a namespace matching selector.
type ReplicaSetLister interface {
	List(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error)
}

// ReplicaSetListerFunc adapts a function to [ReplicaSetLister].
type ReplicaSetListerFunc func(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error)

// List calls f.
func (f ReplicaSetListerFunc) List(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return f(namespace, selector)
}

// ReplicaSetReader reads ReplicaSets: by key to sync one, and by namespace
// to find the ReplicaSets that share an owner (for the co-location rank)
// and those that select an orphan pod (in the [Controller]).
type ReplicaSetReader interface {
	ReplicaSetGetter
	ReplicaSetLister
}

// PodLister lists the pods of a namespace matching selector.
type PodLister interface {
	List(namespace string, selector labels.Selector) ([]*corev1.Pod, error)
}

// PodListerFunc adapts a function to [PodLister].
type PodListerFunc func(namespace string, selector labels.Selector) ([]*corev1.Pod, error)

// List calls f.
func (f PodListerFunc) List(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	return f(namespace, selector)
}

// PodsByController is an optional extension of a [PodLister]: it returns
// the pods in namespace whose controller reference has the given UID, and
// with an empty uid the pods without a controller. When the pod lister
// implements it, the Reconciler reads a ReplicaSet's pods and the
// namespace's orphans through it instead of listing the namespace.
type PodsByController interface {
	ListByController(namespace string, uid types.UID) ([]*corev1.Pod, error)
}

// PodWriter writes pods through the API.
type PodWriter interface {
	// CreatePod creates pod (its GenerateName set, Name empty) in
	// pod.Namespace and returns the created object.
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes the pod namespace/name. If uid is not empty it is a
	// precondition: a pod with another UID is not deleted (Conflict).
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// PatchPod applies a strategic merge patch to the pod namespace/name.
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
}

// PodGetter reads one pod from the API server, not from a cache. [Apply]
// uses it to settle a failed deletion: the error may hide a deletion that
// happened (a lost response, a timeout). A missing pod is reported with an
// error for which apierrors.IsNotFound is true.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// StatusWriter writes a ReplicaSet's status and reads ReplicaSets live
// (bypassing any cache) when a fresh copy is needed.
type StatusWriter interface {
	// UpdateReplicaSetStatus writes rs.Status, guarded by
	// rs.ResourceVersion, and returns the stored object.
	UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// GetReplicaSet reads a ReplicaSet from the API, not from a cache. The
	// caller may modify the returned object.
	GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)
}

// Client is every write the Reconciler makes, and the live reads that
// settle what a failed write did.
type Client interface {
	PodWriter
	PodGetter
	StatusWriter
}

// EventRecorder records an event about obj. Implementations must not block
// for long and must be safe for concurrent use; a client-go
// record.EventRecorder satisfies it.
type EventRecorder interface {
	Event(obj runtime.Object, eventType, reason, message string)
}

// EventRecorderFunc adapts a function to [EventRecorder].
type EventRecorderFunc func(obj runtime.Object, eventType, reason, message string)

// Event calls f.
func (f EventRecorderFunc) Event(obj runtime.Object, eventType, reason, message string) {
	f(obj, eventType, reason, message)
}

// discardEvents is the EventRecorder used when none is configured.
type discardEvents struct{}

func (discardEvents) Event(runtime.Object, string, string, string) {}

var (
	_ ReplicaSetGetter = ReplicaSetGetterFunc(nil)
	_ ReplicaSetLister = ReplicaSetListerFunc(nil)
	_ PodLister        = PodListerFunc(nil)
	_ EventRecorder    = EventRecorderFunc(nil)
	_ EventRecorder    = discardEvents{}
)
