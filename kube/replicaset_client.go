package kube

import (
	"context"
	"time"

	"github.com/ctrlkit/ctrlkit/replicaset"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ReplicaSetClient makes the writes of the ReplicaSet controller through a
// typed clientset. It satisfies replicaset.Client.
type ReplicaSetClient struct {
	// Clientset is the client to write with. Required.
	Clientset kubernetes.Interface
	// Grace, if positive, lets a request started before its context was
	// cancelled run on for up to Grace (see [DeploymentClient.Grace]).
	Grace time.Duration
}

var _ replicaset.Client = ReplicaSetClient{}

// CreatePod creates pod in pod.Namespace.
func (c ReplicaSetClient) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// DeletePod deletes the pod namespace/name, with uid as a precondition when
// it is not empty.
func (c ReplicaSetClient) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return c.Clientset.CoreV1().Pods(namespace).Delete(ctx, name, opts)
}

// GetPod reads the pod namespace/name from the API server.
func (c ReplicaSetClient) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// PatchPod applies a strategic merge patch to the pod namespace/name.
func (c ReplicaSetClient) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	_, err := c.Clientset.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// UpdateReplicaSetStatus writes rs's status subresource, guarded by its
// resourceVersion.
func (c ReplicaSetClient) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

// GetReplicaSet reads the ReplicaSet key from the API server.
func (c ReplicaSetClient) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}
