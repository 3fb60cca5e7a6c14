package kube

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// DeploymentClient makes the writes of the Deployment controller through a
// typed clientset. It satisfies deployment.Client.
type DeploymentClient struct {
	// Clientset is the client to write with. Required.
	Clientset kubernetes.Interface
	// Grace, if positive, lets a request started before its context was
	// cancelled run on for up to Grace, so that a shutdown drains the
	// write in flight instead of abandoning it half-way. Zero means
	// requests end with their context.
	Grace time.Duration
}

var _ deployment.Client = DeploymentClient{}

// CreateReplicaSet creates rs in rs.Namespace.
func (c DeploymentClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

// UpdateReplicaSet updates rs, guarded by its resourceVersion.
func (c DeploymentClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

// DeleteReplicaSet deletes the ReplicaSet key if its UID is uid, letting
// the garbage collector delete its pods in the background (upstream's
// default propagation for this call).
func (c DeploymentClient) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return c.Clientset.AppsV1().ReplicaSets(key.Namespace).Delete(ctx, key.Name, opts)
}

// PatchReplicaSet patches the ReplicaSet key.
func (c DeploymentClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(key.Namespace).Patch(ctx, key.Name, pt, data, metav1.PatchOptions{})
}

// GetReplicaSet reads the ReplicaSet key from the API server.
func (c DeploymentClient) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

// UpdateDeployment updates d's spec and metadata, guarded by its
// resourceVersion.
func (c DeploymentClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
}

// UpdateDeploymentStatus writes d's status subresource, guarded by its
// resourceVersion.
func (c DeploymentClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	ctx, cancel := graceful(ctx, c.Grace)
	defer cancel()
	return c.Clientset.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
}

// LiveDeployments reads Deployments from the API server, bypassing any
// cache: the deployment Reconciler's Live getter, which it consults before
// adopting ReplicaSets. A read started before its context was cancelled
// may run on for up to grace (see [DeploymentClient.Grace]).
func LiveDeployments(cs kubernetes.Interface, grace time.Duration) reconcile.Getter[*appsv1.Deployment] {
	return reconcile.GetterFunc[*appsv1.Deployment](func(ctx context.Context, key types.NamespacedName) (*appsv1.Deployment, error) {
		ctx, cancel := graceful(ctx, grace)
		defer cancel()
		return cs.AppsV1().Deployments(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	})
}

// graceful returns ctx itself when grace is not positive, and otherwise a
// context that outlives ctx's cancellation by up to grace (but keeps its
// values).
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	if grace <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), grace)
}
