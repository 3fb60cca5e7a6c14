package writes

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeploymentClient has the methods of deployment.Client (this package
// cannot import it): the writes of the Deployment controller.
type DeploymentClient interface {
	CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error
	PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error)
	GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)
	UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
}

// ReplicaSetClient has the methods of replicaset.Client: the writes of the
// ReplicaSet controller.
type ReplicaSetClient interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)
}

// TrackDeployments returns c reporting to t: every ReplicaSet create (a
// failed one too, since the error may hide a create that happened), the
// updates and patches that stored a new version, and the failed
// ReplicaSet updates and patches.
func TrackDeployments(c DeploymentClient, t *Tracker) DeploymentClient {
	return deploymentClient{DeploymentClient: c, t: t}
}

type deploymentClient struct {
	DeploymentClient
	t *Tracker
}

func (c deploymentClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := c.DeploymentClient.CreateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.Created(ctx, keyOf(out.Namespace, out.Name), out.UID)
	} else {
		c.t.Created(ctx, keyOf(rs.Namespace, rs.Name), "")
	}
	return out, err
}

func (c deploymentClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	key := keyOf(rs.Namespace, rs.Name)
	replaced := c.t.Version(ctx, ReplicaSet, key)
	out, err := c.DeploymentClient.UpdateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.Wrote(ctx, ReplicaSet, key, replaced, out.ResourceVersion, rs.ResourceVersion)
	} else if err != nil {
		c.t.Failed(ctx, key, replaced, err)
	}
	return out, err
}

func (c deploymentClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	replaced := c.t.Version(ctx, ReplicaSet, key)
	out, err := c.DeploymentClient.PatchReplicaSet(ctx, key, pt, data)
	if err == nil && out != nil {
		c.t.Wrote(ctx, ReplicaSet, key, replaced, out.ResourceVersion, "")
	} else if err != nil {
		c.t.Failed(ctx, key, replaced, err)
	}
	return out, err
}

func (c deploymentClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return c.deployment(ctx, d, c.DeploymentClient.UpdateDeployment)
}

func (c deploymentClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	return c.deployment(ctx, d, c.DeploymentClient.UpdateDeploymentStatus)
}

func (c deploymentClient) deployment(ctx context.Context, d *appsv1.Deployment,
	write func(context.Context, *appsv1.Deployment) (*appsv1.Deployment, error)) (*appsv1.Deployment, error) {
	key := keyOf(d.Namespace, d.Name)
	replaced := c.t.Version(ctx, Deployment, key)
	out, err := write(ctx, d)
	if err == nil && out != nil {
		c.t.Wrote(ctx, Deployment, key, replaced, out.ResourceVersion, d.ResourceVersion)
	}
	return out, err
}

// TrackReplicaSets returns c marking the cache after each status write
// that stored a new version, so that the ReplicaSet controller does not
// sync the ReplicaSet again from the version it has just replaced: it
// waits for the write's event, which enqueues the ReplicaSet anyway.
func TrackReplicaSets(c ReplicaSetClient, cache Cache) ReplicaSetClient {
	return replicaSetClient{ReplicaSetClient: c, cache: cache}
}

type replicaSetClient struct {
	ReplicaSetClient
	cache Cache
}

func (c replicaSetClient) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	key := keyOf(rs.Namespace, rs.Name)
	replaced, _, _ := c.cache.Cached(ctx, ReplicaSet, key)
	out, err := c.ReplicaSetClient.UpdateReplicaSetStatus(ctx, rs)
	if err == nil && out != nil {
		Mark(c.cache, ReplicaSet, key, replaced, out.ResourceVersion, "")
	}
	return out, err
}

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
