package memcluster

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ControllerClient adapts a cluster to the write interfaces of this
// library's controllers: it satisfies replicaset.Client and
// deployment.Client structurally (memcluster imports neither). Their
// readers are informer caches, fed by [Client.ListWatcher]:
//
//	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
//	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
//	rsc, err := replicaset.NewController(replicaset.ControllerConfig{
//		ReplicaSets: rsInf, Pods: podInf, Client: memcluster.ControllerClient{Cluster: c}, Clock: fc,
//	})
//
// ExampleControllerClient runs both controllers this way.
//
// Its writes are recorded in managedFields (on a tracked cluster, see
// [Config.TypeConverter]) as FieldManager's.
type ControllerClient struct {
	Cluster *Cluster
	// FieldManager names the writer in managedFields. Empty:
	// "kube-controller-manager", as a real cluster records the
	// Deployment and ReplicaSet controllers' writes.
	FieldManager string
}

func (a ControllerClient) manager() string {
	if a.FieldManager == "" {
		return controllerManager
	}
	return a.FieldManager
}

// CreatePod creates pod in pod.Namespace.
func (a ControllerClient) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return a.Cluster.Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: a.manager()})
}

// DeletePod deletes a pod, with uid (if not empty) as a precondition.
func (a ControllerClient) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return a.Cluster.Pods(namespace).Delete(ctx, name, deleteOptions(uid))
}

// PatchPod applies a strategic merge patch to a pod.
func (a ControllerClient) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := a.Cluster.Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: a.manager()})
	return err
}

// GetPod reads a pod from the cluster (not from a cache).
func (a ControllerClient) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return a.Cluster.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetReplicaSet reads a ReplicaSet from the cluster (not from a cache).
func (a ControllerClient) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return a.Cluster.ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

// CreateReplicaSet creates rs in rs.Namespace.
func (a ControllerClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.Cluster.ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{FieldManager: a.manager()})
}

// UpdateReplicaSet updates rs, guarded by its resourceVersion.
func (a ControllerClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.Cluster.ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{FieldManager: a.manager()})
}

// UpdateReplicaSetStatus writes rs.Status, guarded by its resourceVersion.
func (a ControllerClient) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return a.Cluster.ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{FieldManager: a.manager()})
}

// DeleteReplicaSet deletes a ReplicaSet (its pods are garbage collected),
// with uid (if not empty) as a precondition.
func (a ControllerClient) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	return a.Cluster.ReplicaSets(key.Namespace).Delete(ctx, key.Name, deleteOptions(uid))
}

// PatchReplicaSet patches a ReplicaSet.
func (a ControllerClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	return a.Cluster.ReplicaSets(key.Namespace).Patch(ctx, key.Name, pt, data, metav1.PatchOptions{FieldManager: a.manager()})
}

// UpdateDeployment updates d, guarded by its resourceVersion.
func (a ControllerClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.Cluster.Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: a.manager()})
}

// UpdateDeploymentStatus writes d.Status, guarded by its resourceVersion.
func (a ControllerClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return a.Cluster.Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: a.manager()})
}

func deleteOptions(uid types.UID) metav1.DeleteOptions {
	if uid == "" {
		return metav1.DeleteOptions{}
	}
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}
