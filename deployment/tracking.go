package deployment

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// writeTracker lets the Controller wait for its own writes. A sync that
// updates a ReplicaSet or the Deployment's status leaves the informer
// caches behind the API server until the write's event arrives. Upstream
// syncs again at once on whatever event comes first, decides on the stale
// copies, and its writes fail with Conflict (409) or repeat the last one.
// The tracker remembers, per Deployment, the versions its last sync
// replaced; the next sync is skipped while a cache still holds one of
// them, because the event that moves the cache on also enqueues the
// Deployment again (every ReplicaSet or Deployment update does).
//
// The marks live in the shared caches ([informer.Cache.Wrote]), so the
// ReplicaSet controller also sees that a ReplicaSet it is about to sync
// was just scaled, and waits for that event instead of writing its
// status on the old version.
type writeTracker struct {
	deployments *informer.Cache[*appsv1.Deployment]
	replicaSets *informer.Cache[*appsv1.ReplicaSet]

	mu      sync.Mutex
	pending map[types.NamespacedName][]trackedWrite // by Deployment
}

type trackedWrite struct {
	rs  bool // a ReplicaSet, else the Deployment
	key types.NamespacedName
}

// syncKey carries the Deployment being synced to the tracking client.
type syncKey struct{}

// behind reports whether a write of the last sync of d has not reached the
// caches yet; once none is pending it forgets them.
func (t *writeTracker) behind(d types.NamespacedName) bool {
	t.mu.Lock()
	writes := t.pending[d]
	t.mu.Unlock()
	for _, w := range writes {
		if w.rs && t.replicaSets.Behind(w.key) || !w.rs && t.deployments.Behind(w.key) {
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

// wrote records a successful write made while syncing the Deployment in
// ctx; replaced is the cached version before the write.
func (t *writeTracker) wrote(ctx context.Context, w trackedWrite, replaced string) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok || replaced == "" {
		return
	}
	if w.rs {
		t.replicaSets.Wrote(w.key, replaced)
	} else {
		t.deployments.Wrote(w.key, replaced)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[types.NamespacedName][]trackedWrite)
	}
	t.pending[d] = append(t.pending[d], w)
}

func (t *writeTracker) cachedRS(key types.NamespacedName) string {
	if rs, err := t.replicaSets.Get(key); err == nil {
		return rs.ResourceVersion
	}
	return ""
}

func (t *writeTracker) cachedDeployment(key types.NamespacedName) string {
	if d, err := t.deployments.Get(key); err == nil {
		return d.ResourceVersion
	}
	return ""
}

// trackingClient is a Client that reports successful updates and patches
// to a writeTracker. The cached version is read before the write: read
// after, it could already be the write's own event. Only writes that
// stored a new version count: an update that changes nothing keeps the
// resourceVersion and sends no event, and waiting for one would wait
// forever. Deletions are not tracked (deleting an object that is already
// being deleted changes nothing either).
//
// Liveness: a write is tracked only when the stored version differs from
// the cached one, so the cache has not seen the server's current version
// yet, and the watch will deliver it (or a later one, or a deletion).
type trackingClient struct {
	Client
	t *writeTracker
}

func (c trackingClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	key := keyOf(rs)
	replaced := c.t.cachedRS(key)
	out, err := c.Client.UpdateReplicaSet(ctx, rs)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{rs: true, key: key}, replaced)
	}
	return out, err
}

func (c trackingClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	replaced := c.t.cachedRS(key)
	out, err := c.Client.PatchReplicaSet(ctx, key, pt, data)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{rs: true, key: key}, replaced)
	}
	return out, err
}

func (c trackingClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	key := keyOf(d)
	replaced := c.t.cachedDeployment(key)
	out, err := c.Client.UpdateDeployment(ctx, d)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{key: key}, replaced)
	}
	return out, err
}

func (c trackingClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	key := keyOf(d)
	replaced := c.t.cachedDeployment(key)
	out, err := c.Client.UpdateDeploymentStatus(ctx, d)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{key: key}, replaced)
	}
	return out, err
}

// changed reports whether a write stored a version other than replaced
// (a nil result, from a client that returns none, does not count).
func changed[T interface {
	*appsv1.ReplicaSet | *appsv1.Deployment
	GetResourceVersion() string
}](out T, replaced string) bool {
	return out != nil && out.GetResourceVersion() != replaced
}
