package controllerruntime

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Writer makes the writes of both controllers with a controller-runtime
// client (the manager's), and their live reads with an uncached reader
// (the manager's API reader). It satisfies deployment.Client and
// replicaset.Client. Objects passed in are never modified: each write
// sends a copy and returns what the API server stored.
type Writer struct {
	// Client writes. Required.
	Client client.Client
	// Live reads objects from the API server, bypassing caches. Nil means
	// Client.
	Live client.Reader
}

var (
	_ deployment.Client = Writer{}
	_ replicaset.Client = Writer{}
)

func (w Writer) live() client.Reader {
	if w.Live != nil {
		return w.Live
	}
	return w.Client
}

// CreateReplicaSet creates rs.
func (w Writer) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out := rs.DeepCopy()
	if err := w.Client.Create(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateReplicaSet updates rs, guarded by its resourceVersion.
func (w Writer) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out := rs.DeepCopy()
	if err := w.Client.Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteReplicaSet deletes the ReplicaSet key if its UID is uid (any UID
// when uid is empty); its pods are garbage collected in the background.
func (w Writer) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return w.Client.Delete(ctx, rs, preconditions(uid)...)
}

// PatchReplicaSet patches the ReplicaSet key.
func (w Writer) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	out := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := w.Client.Patch(ctx, out, client.RawPatch(pt, data)); err != nil {
		return nil, err
	}
	return out, nil
}

// GetPod reads a pod from the API server (the ReplicaSet controller settles
// a failed deletion with it).
func (w Writer) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := w.live().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetReplicaSet reads the ReplicaSet key from the API server.
func (w Writer) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	out := &appsv1.ReplicaSet{}
	if err := w.live().Get(ctx, key, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateReplicaSetStatus writes rs's status subresource, guarded by its
// resourceVersion.
func (w Writer) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out := rs.DeepCopy()
	if err := w.Client.Status().Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateDeployment updates d's spec and metadata, guarded by its
// resourceVersion.
func (w Writer) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	out := d.DeepCopy()
	if err := w.Client.Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateDeploymentStatus writes d's status subresource, guarded by its
// resourceVersion.
func (w Writer) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	out := d.DeepCopy()
	if err := w.Client.Status().Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetDeployment reads the Deployment key from the API server (the
// deployment Reconciler's Live getter).
func (w Writer) GetDeployment(ctx context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
	out := &appsv1.Deployment{}
	if err := w.live().Get(ctx, key, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CreatePod creates pod in pod.Namespace.
func (w Writer) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	if err := w.Client.Create(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeletePod deletes the pod namespace/name, with uid as a precondition
// when it is not empty.
func (w Writer) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return w.Client.Delete(ctx, pod, preconditions(uid)...)
}

// PatchPod applies a strategic merge patch to the pod namespace/name.
func (w Writer) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return w.Client.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
}

func preconditions(uid types.UID) []client.DeleteOption {
	if uid == "" {
		return nil
	}
	return []client.DeleteOption{client.Preconditions{UID: &uid}}
}
