package controllerruntime

import (
	"context"
	"slices"
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
	replaced map[markKey][]string
}

func newWriteMarks(cache client.Reader) *writeMarks {
	return &writeMarks{cache: cache, replaced: make(map[markKey][]string)}
}

// mark adds replaced to the stale versions of k; the caller holds mu.
func (m *writeMarks) mark(k markKey, replaced string) {
	if replaced == "" || slices.Contains(m.replaced[k], replaced) {
		return
	}
	marks := append(m.replaced[k], replaced)
	if len(marks) > 8 {
		marks = slices.Clone(marks[len(marks)-8:])
	}
	m.replaced[k] = marks
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

// wrote marks k as replaced by a write that stored out (nil: no result),
// and based, the version the write was based on, when it is another one
// (the result of an earlier write of the same sync, which the cache has
// not seen either; e2e soak seed 4019).
func (m *writeMarks) wrote(k markKey, replaced string, out client.Object, based ...string) bool {
	if replaced == "" || out == nil || out.GetResourceVersion() == replaced {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mark(k, replaced)
	for _, b := range based {
		m.mark(k, b)
	}
	return true
}

// behind reports whether the cache still holds the version of k that a
// write replaced; once it does not, the mark goes.
func (m *writeMarks) behind(ctx context.Context, k markKey) bool {
	m.mu.Lock()
	marks := slices.Clone(m.replaced[k])
	m.mu.Unlock()
	if len(marks) == 0 {
		return false
	}
	if slices.Contains(marks, m.cachedRV(ctx, k)) {
		return true
	}
	m.mu.Lock()
	if slices.Equal(m.replaced[k], marks) {
		delete(m.replaced, k)
	}
	m.mu.Unlock()
	return false
}

// syncKey carries the Deployment being synced to the tracking writer.
type syncKey struct{}

// trackedWrite is a write of a Deployment's last sync: an update or a
// patch marked in writeMarks, or a ReplicaSet create.
type trackedWrite struct {
	markKey
	// create marks a ReplicaSet the sync created (or may have: uid is
	// empty when the create failed, maybe ambiguously).
	create bool
	uid    types.UID
	// failed marks a ReplicaSet update or patch that returned an error;
	// replaced is the cached version it was based on.
	failed   bool
	replaced string
}

// deploymentWrites is the Deployment controller's view of its writes: the
// writes of the last sync of each Deployment, updates and patches (through
// the marks) and ReplicaSet creates.
//
// Creates are tracked as the packaged controller tracks them (a
// deliberate difference from upstream): a sync that runs before the cache
// has the ReplicaSet the last sync created sees no such ReplicaSet, and
// with a new template by then it takes the created one for missing,
// creates another at full size, and numbers it from a history that lacks
// the first (a duplicate revision; two full-size ReplicaSets under
// Recreate). So the next sync of that Deployment waits until the cache has
// it, or until a live read says it is gone. Failed creates are tracked the
// same way: the error may hide a create that happened (a lost response, a
// timeout). So are failed ReplicaSet updates and patches, by the packaged
// controller's rule (deployment.WritePending): if a live read finds a
// newer version than the cache's, the next sync waits for its event
// instead of sizing a rollout step on a stale spec.replicas.
type deploymentWrites struct {
	marks *writeMarks
	// live reads ReplicaSets from the API server, bypassing the cache.
	live client.Reader

	mu      sync.Mutex
	pending map[types.NamespacedName][]trackedWrite
}

func newDeploymentWrites(marks *writeMarks, live client.Reader) *deploymentWrites {
	return &deploymentWrites{marks: marks, live: live, pending: make(map[types.NamespacedName][]trackedWrite)}
}

// behind reports whether a write of the last sync of d has not reached the
// cache yet; once none is pending it forgets them. A created ReplicaSet
// that the cache lacks is looked up live: if the API server has it, its
// event is on the way; if not (it was deleted before the cache saw it, or
// a failed create did not happen), there is nothing to wait for. An error
// of that read is returned: the caller retries later.
func (t *deploymentWrites) behind(ctx context.Context, d types.NamespacedName) (bool, error) {
	t.mu.Lock()
	writes := t.pending[d]
	t.mu.Unlock()
	for _, w := range writes {
		if w.create {
			waiting, err := t.createPending(ctx, w)
			if err != nil || waiting {
				return waiting, err
			}
		} else if w.failed {
			waiting, err := t.writePending(ctx, w)
			if err != nil || waiting {
				return waiting, err
			}
		} else if t.marks.behind(ctx, w.markKey) {
			return true, nil
		}
	}
	if len(writes) > 0 {
		t.mu.Lock()
		delete(t.pending, d)
		t.mu.Unlock()
	}
	return false, nil
}

// createPending reports whether the ReplicaSet created by w exists but is
// not in the cache yet, by the packaged controller's rule
// (deployment.CreatePending).
func (t *deploymentWrites) createPending(ctx context.Context, w trackedWrite) (bool, error) {
	return deployment.CreatePending(ctx, w.key, w.uid, func(key types.NamespacedName) (types.UID, bool) {
		return t.cachedUID(ctx, key)
	}, func(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
		rs := &appsv1.ReplicaSet{}
		if err := t.live.Get(ctx, key, rs); err != nil {
			return nil, err
		}
		return rs, nil
	})
}

// writePending reports whether the failed write w has left the cache
// behind the API server (deployment.WritePending); if so it marks the
// ReplicaSet, so that the ReplicaSet controller waits for its event too.
func (t *deploymentWrites) writePending(ctx context.Context, w trackedWrite) (bool, error) {
	waiting, err := deployment.WritePending(ctx, w.key, w.replaced, func(key types.NamespacedName) (string, bool) {
		rv := t.marks.cachedRV(ctx, markKey{key: key})
		return rv, rv != ""
	}, func(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
		rs := &appsv1.ReplicaSet{}
		if err := t.live.Get(ctx, key, rs); err != nil {
			return nil, err
		}
		return rs, nil
	})
	if waiting {
		t.marks.mu.Lock()
		t.marks.mark(w.markKey, w.replaced)
		t.marks.mu.Unlock()
	}
	return waiting, err
}

// failed records a ReplicaSet update or patch that returned err, made
// while syncing the Deployment in ctx; replaced is the cached version
// before it.
func (t *deploymentWrites) failed(ctx context.Context, k markKey, replaced string, err error) {
	if replaced == "" || !deployment.MayHaveChanged(err) {
		return
	}
	t.record(ctx, trackedWrite{markKey: k, failed: true, replaced: replaced})
}

// cachedUID returns the UID of the cached ReplicaSet key, if the cache has
// it.
func (t *deploymentWrites) cachedUID(ctx context.Context, key types.NamespacedName) (types.UID, bool) {
	rs := &appsv1.ReplicaSet{}
	if err := t.marks.cache.Get(ctx, key, rs); err != nil {
		return "", false
	}
	return rs.UID, true
}

// record adds w to the writes of the Deployment synced in ctx.
func (t *deploymentWrites) record(ctx context.Context, w trackedWrite) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[d] = append(t.pending[d], w)
}

// wrote records an update or patch that stored out; replaced is the
// cached version before it, based (if any) the version it was based on.
func (t *deploymentWrites) wrote(ctx context.Context, k markKey, replaced string, out client.Object, based ...string) {
	if _, ok := ctx.Value(syncKey{}).(types.NamespacedName); !ok || !t.marks.wrote(k, replaced, out, based...) {
		return
	}
	t.record(ctx, trackedWrite{markKey: k})
}

// trackingDeploymentClient reports the Deployment controller's ReplicaSet
// creates, its successful updates and patches, and its failed ReplicaSet
// updates and patches, to its deploymentWrites. The cached version is read before an update: read
// after, it could already be the write's own event.
type trackingDeploymentClient struct {
	deployment.Client
	t *deploymentWrites
}

// CreateReplicaSet reports every create: a failed one too, since the
// error may hide a create that happened; the next sync settles it with a
// live read if the cache lacks the name.
func (c trackingDeploymentClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := c.Client.CreateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.record(ctx, trackedWrite{markKey: markKey{key: client.ObjectKeyFromObject(out)}, create: true, uid: out.UID})
	} else {
		c.t.record(ctx, trackedWrite{markKey: markKey{key: client.ObjectKeyFromObject(rs)}, create: true})
	}
	return out, err
}

func (c trackingDeploymentClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	k := markKey{key: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out, rs.ResourceVersion)
	} else if err != nil {
		c.t.failed(ctx, k, replaced, err)
	}
	return out, err
}

func (c trackingDeploymentClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	k := markKey{key: key}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.PatchReplicaSet(ctx, key, pt, data)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out)
	} else if err != nil {
		c.t.failed(ctx, k, replaced, err)
	}
	return out, err
}

func (c trackingDeploymentClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	k := markKey{deployment: true, key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateDeployment(ctx, d)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out, d.ResourceVersion)
	}
	return out, err
}

func (c trackingDeploymentClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	k := markKey{deployment: true, key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}}
	replaced := c.t.marks.cachedRV(ctx, k)
	out, err := c.Client.UpdateDeploymentStatus(ctx, d)
	if err == nil && out != nil {
		c.t.wrote(ctx, k, replaced, out, d.ResourceVersion)
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
