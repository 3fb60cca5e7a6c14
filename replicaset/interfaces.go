package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The readers a [Reconciler] takes are the shared ones of package
// reconcile ([reconcile.Reader], [reconcile.Lister],
// [reconcile.ByController]); [reconcile.FromCache] and [NewPodCache] serve
// them from informer caches. Readers return shared, read-only objects: the
// Reconciler never modifies what they return. The writers below are the
// ReplicaSet controller's own.

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

// PodGetter reads one pod from the API server, not from a cache. [WritePods]
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

// EventRecorder records events about ReplicaSets; it is the one
// [reconcile.EventRecorder] of every ctrlkit controller. A nil
// EventRecorder discards events.
type EventRecorder = reconcile.EventRecorder

// EventRecorderFunc adapts a function to [EventRecorder].
type EventRecorderFunc = reconcile.EventRecorderFunc

// discardEvents is the EventRecorder used when none is configured.
type discardEvents struct{}

func (discardEvents) Event(runtime.Object, string, string, string) {}

var _ EventRecorder = discardEvents{}
