package controllerruntime

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// markKey names a tracked object: a ReplicaSet, or a Deployment.
type markKey struct {
	deployment bool
	key        types.NamespacedName
}

// writeMarks lets controllers wait for their own writes over a
// controller-runtime cache, as ctrlkit's packaged controllers do over
// theirs (informer.Cache.Wrote and Behind): after a successful update or
// patch it remembers the version the cache held before (the one the
// write replaced), and until the cache holds another version a sync of
// that object would decide on a copy known to be stale, and write with a
// resourceVersion that fails with Conflict. The write's event enqueues
// the key again, so the sync is skipped instead.
//
// Liveness: a write is marked only when the stored version differs from
// the cached one, so the cache has not seen the server's current version
// yet and the watch will deliver it (or a later one, or a deletion).
type writeMarks struct {
	cache client.Reader

	mu       sync.Mutex
	replaced map[markKey]string
}

func newWriteMarks(cache client.Reader) *writeMarks {
	return &writeMarks{cache: cache, replaced: make(map[markKey]string)}
}

// cachedRV returns the resourceVersion of the cached object, or "".
func (m *writeMarks) cachedRV(ctx context.Context, k markKey) string {
	var obj client.Object = &appsv1.ReplicaSet{}
	if k.deployment {
		obj = &appsv1.Deployment{}
	}
	if err := m.cache.Get(ctx, k.key, obj); err != nil {
		return ""
	}
	return obj.GetResourceVersion()
}

// wrote marks k as replaced by a write that stored out (nil: no result).
func (m *writeMarks) wrote(k markKey, replaced string, out client.Object) bool {
	if replaced == "" || out == nil || out.GetResourceVersion() == replaced {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replaced[k] = replaced
	return true
}

// behind reports whether the cache still holds the version of k that a
// write replaced; once it does not, the mark goes.
func (m *writeMarks) behind(ctx context.Context, k markKey) bool {
	m.mu.Lock()
	replaced, ok := m.replaced[k]
	m.mu.Unlock()
	if !ok {
		return false
	}
	if m.cachedRV(ctx, k) == replaced {
		return true
	}
	m.mu.Lock()
	if m.replaced[k] == replaced {
		delete(m.replaced, k)
	}
	m.mu.Unlock()
	return false
}

// syncKey carries the Deployment being synced to the tracking writer.
type syncKey struct{}

// deploymentWrites is the Deployment controller's view of the marks: the
// writes of the last sync of each Deployment.
type deploymentWrites struct {
	marks *writeMarks

	mu      sync.Mutex
	pending map[types.NamespacedName][]markKey
}

// behind reports whether a write of the last sync of d has not reached the
// cache yet; once none is pending it forgets them.
func (t *deploymentWrites) behind(ctx context.Context, d types.NamespacedName) bool {
	t.mu.Lock()
	writes := t.pending[d]
	t.mu.Unlock()
	for _, w := range writes {
		if t.marks.behind(ctx, w) {
			return true
		}
	}
	if len(writes) > 0 {
		t.mu.Lock()
		delete(t.pending, d)
		t.mu.Unlock()
	}
	return false
}

func (t *deploymentWrites) wrote(ctx context.Context, k markKey, replaced string, out client.Object) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok || !t.marks.wrote(k, replaced, out) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[d] = append(t.pending[d], k)
}

// trackingDeploymentClient reports the Deployment controller's successful
// updates and patches to its deploymentWrites. The cached version is read
// before the write: read after, it could already be the write's own event.
type trackingDeploymentClient struct {
	deployment.Client
	t *deploymentWrites
}

func (c trackingDeploymentClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	k := markKey{key: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out)
	}
	return out, err
}

func (c trackingDeploymentClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	k := markKey{key: key}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.PatchReplicaSet(ctx, key, pt, data)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out)
	}
	return out, err
}

func (c trackingDeploymentClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	k := markKey{deployment: true, key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateDeployment(ctx, d)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out)
	}
	return out, err
}

func (c trackingDeploymentClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	k := markKey{deployment: true, key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateDeploymentStatus(ctx, d)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out)
	}
	return out, err
}

// trackingReplicaSetClient marks a ReplicaSet after each of the
// ReplicaSet controller's status writes.
type trackingReplicaSetClient struct {
	replicaset.Client
	marks *writeMarks
}

func (c trackingReplicaSetClient) UpdateReplicaSetStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	k := markKey{key: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}}
	replaced := c.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateReplicaSetStatus(ctx, rs)
	if err == nil && out != nil {
		c.marks.wrote(k, replaced, out)
	}
	return out, err
}
