package deployment

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
//
// Creates are tracked too (a deliberate difference from upstream). A sync
// that runs before the ReplicaSet cache has the ReplicaSet the last sync
// created sees no such ReplicaSet: with a new template by then, it takes
// the created one for missing, creates another at full size, and numbers
// it from a history that lacks the first (two full-size ReplicaSets under
// Recreate, a duplicate revision). So the next sync of that Deployment
// waits until the cache has it, or until a live read says it is gone.
// Failed creates are tracked the same way: the error may hide a create
// that happened (a lost response, a timeout).
//
// So are failed ReplicaSet updates and patches (e2e soak seed 3878): a
// scale answered with an error may have happened all the same, and a
// Conflict says that the cached copy it was based on is gone. The next
// sync settles it with a live read ([WritePending]): if the API server
// holds a newer version than the cache, the sync waits for its event.
// Upstream decides on the stale spec.replicas, and with a new template by
// then sizes the new ReplicaSet as if the old one had not grown, beyond
// maxSurge.
type writeTracker struct {
	deployments *informer.Cache[*appsv1.Deployment]
	replicaSets *informer.Cache[*appsv1.ReplicaSet]
	// live reads a ReplicaSet from the API server, bypassing the cache.
	live func(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)

	mu      sync.Mutex
	pending map[types.NamespacedName][]trackedWrite // by Deployment
}

type trackedWrite struct {
	rs  bool // a ReplicaSet, else the Deployment
	key types.NamespacedName
	// create marks a ReplicaSet this process created (or may have: uid is
	// empty when the create failed ambiguously).
	create bool
	uid    types.UID
	// failed marks a ReplicaSet update or patch that returned an error;
	// replaced is the cached version it was based on.
	failed   bool
	replaced string
}

// syncKey carries the Deployment being synced to the tracking client.
type syncKey struct{}

// behind reports whether a write of the last sync of d has not reached the
// caches yet; once none is pending it forgets them. A created ReplicaSet
// that the cache lacks is looked up live: if the API server has it, its
// event is on the way; if not (it was deleted before the cache saw it, or
// an ambiguous create did not happen), there is nothing to wait for. An
// error of that read is returned: the caller retries later.
func (t *writeTracker) behind(ctx context.Context, d types.NamespacedName) (bool, error) {
	t.mu.Lock()
	writes := t.pending[d]
	t.mu.Unlock()
	for _, w := range writes {
		switch {
		case w.create:
			waiting, err := t.createPending(ctx, w)
			if err != nil || waiting {
				return waiting, err
			}
		case w.failed:
			waiting, err := WritePending(ctx, w.key, w.replaced, t.cachedRSVersion, t.live)
			if err != nil || waiting {
				if waiting {
					// From now on the ReplicaSet controller waits for it too.
					t.replicaSets.Wrote(w.key, w.replaced)
				}
				return waiting, err
			}
		case w.rs && t.replicaSets.Behind(w.key) || !w.rs && t.deployments.Behind(w.key):
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
// not in the cache yet.
func (t *writeTracker) createPending(ctx context.Context, w trackedWrite) (bool, error) {
	return CreatePending(ctx, w.key, w.uid, func(key types.NamespacedName) (types.UID, bool) {
		rs, err := t.replicaSets.Get(key)
		if err != nil {
			return "", false
		}
		return rs.UID, true
	}, t.live)
}

// CreatePending reports whether a ReplicaSet a sync created is on the API
// server but not in the controller's cache yet, so that the next sync of
// its Deployment must wait for the create's event (see [Controller]: a
// sync that misses the ReplicaSet the last one created would create a
// second one). uid is the created ReplicaSet's, or "" when the create
// failed without telling whether it happened. cached returns the UID of
// the cached ReplicaSet key (false: not cached); live reads it from the
// API server, bypassing the cache. A ReplicaSet that is gone, or whose
// name another has taken, is nothing to wait for. A live read's error is
// returned: the caller retries later. Shells that keep their own cache
// (the controller-runtime adapter) share this rule.
func CreatePending(ctx context.Context, key types.NamespacedName, uid types.UID,
	cached func(types.NamespacedName) (types.UID, bool),
	live func(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error)) (bool, error) {
	if got, ok := cached(key); ok && (uid == "" || got == uid) {
		return false, nil
	}
	rs, err := live(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deployment: confirming the create of ReplicaSet %s: %w", key, err)
	case rs == nil:
		return false, fmt.Errorf("deployment: confirming the create of ReplicaSet %s: the live read returned nothing", key)
	case uid != "" && rs.UID != uid:
		return false, nil // ours is gone; another took its name
	}
	if got, ok := cached(key); ok && got == rs.UID {
		return false, nil // the event arrived meanwhile
	}
	return true, nil
}

// WritePending reports whether an update or patch of a ReplicaSet that
// failed has left the controller's cache behind the API server, so that
// the next sync of its Deployment must wait for the ReplicaSet's next
// event. The error of a write may hide a write that happened (a lost
// response, a timeout), and a Conflict means that the version it was
// based on is gone: either way the cache may hold a spec.replicas the
// API server no longer has, and a rollout step sized on it can go beyond
// maxSurge. replaced is the resourceVersion of the cached copy the write
// was based on; cached returns the resourceVersion of the cached
// ReplicaSet key (false: not cached); live reads it from the API server,
// bypassing the cache. There is nothing to wait for once the cache holds
// another version, or when the API server has none other (the write did
// not happen) or none at all (a deletion's event is on its way anyway).
// A live read's error is returned: the caller retries later. Shells that
// keep their own cache (the controller-runtime adapter) share this rule.
func WritePending(ctx context.Context, key types.NamespacedName, replaced string,
	cached func(types.NamespacedName) (string, bool),
	live func(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error)) (bool, error) {
	if rv, ok := cached(key); !ok || rv != replaced || replaced == "" {
		return false, nil
	}
	rs, err := live(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deployment: confirming a write of ReplicaSet %s: %w", key, err)
	case rs == nil:
		return false, fmt.Errorf("deployment: confirming a write of ReplicaSet %s: the live read returned nothing", key)
	case rs.ResourceVersion == replaced:
		return false, nil // it did not happen, and nothing else did
	}
	if rv, ok := cached(key); !ok || rv != replaced {
		return false, nil // the event arrived meanwhile
	}
	return true, nil
}

// failed records a ReplicaSet update or patch, made while syncing the
// Deployment in ctx, that returned err; replaced is the cached version
// before it. Errors that say the request never reached storage (the
// object is gone, the request is invalid or forbidden) leave nothing to
// settle.
func (t *writeTracker) failed(ctx context.Context, key types.NamespacedName, replaced string, err error) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok || replaced == "" || !MayHaveChanged(err) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[types.NamespacedName][]trackedWrite)
	}
	t.pending[d] = append(t.pending[d], trackedWrite{rs: true, key: key, failed: true, replaced: replaced})
}

// MayHaveChanged reports whether a write that failed with err may have
// left the object at another version than the one it was based on: it
// may have happened (a lost response, a timeout, a server error), or the
// object had changed already (a Conflict). NotFound, Invalid, BadRequest,
// Forbidden, Unauthorized and MethodNotSupported are answered before
// anything is stored, and say nothing about a newer version.
func MayHaveChanged(err error) bool {
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsMethodNotSupported(err):
		return false
	}
	return true
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

// wroteOver records, besides the cached version a write replaced, the
// version it was based on when that is another one: the result of an
// earlier write of the same sync, which the cache has not seen either
// (e2e soak seed 4019: a rolling step scales an old ReplicaSet down twice,
// 4 → 3 → 1, and the cache must wait for the second write's event, not
// the first's).
func (t *writeTracker) wroteOver(ctx context.Context, w trackedWrite, replaced, based string) {
	if based != "" && based != replaced {
		t.wrote(ctx, w, based)
	}
}

// created records a ReplicaSet created (uid set) or maybe created (uid
// empty) while syncing the Deployment in ctx.
func (t *writeTracker) created(ctx context.Context, key types.NamespacedName, uid types.UID) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[types.NamespacedName][]trackedWrite)
	}
	t.pending[d] = append(t.pending[d], trackedWrite{rs: true, key: key, create: true, uid: uid})
}

func (t *writeTracker) cachedRS(key types.NamespacedName) string {
	if rs, err := t.replicaSets.Get(key); err == nil {
		return rs.ResourceVersion
	}
	return ""
}

func (t *writeTracker) cachedRSVersion(key types.NamespacedName) (string, bool) {
	rs, err := t.replicaSets.Get(key)
	if err != nil {
		return "", false
	}
	return rs.ResourceVersion, true
}

func (t *writeTracker) cachedDeployment(key types.NamespacedName) string {
	if d, err := t.deployments.Get(key); err == nil {
		return d.ResourceVersion
	}
	return ""
}

// trackingClient is a Client that reports creates, successful updates
// and patches, and failed ReplicaSet updates and patches, to a
// writeTracker. The cached version is read before the write: read
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

// CreateReplicaSet reports every create: a failed one too, since the
// error may hide a create that happened (a lost response, a timeout); the
// next sync then settles it with a live read if the cache lacks the name.
func (c trackingClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	out, err := c.Client.CreateReplicaSet(ctx, rs)
	if err == nil && out != nil {
		c.t.created(ctx, keyOf(out), out.UID)
	} else {
		c.t.created(ctx, keyOf(rs), "")
	}
	return out, err
}

func (c trackingClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	key := keyOf(rs)
	replaced := c.t.cachedRS(key)
	out, err := c.Client.UpdateReplicaSet(ctx, rs)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{rs: true, key: key}, replaced)
		c.t.wroteOver(ctx, trackedWrite{rs: true, key: key}, replaced, rs.ResourceVersion)
	} else if err != nil {
		c.t.failed(ctx, key, replaced, err)
	}
	return out, err
}

func (c trackingClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	replaced := c.t.cachedRS(key)
	out, err := c.Client.PatchReplicaSet(ctx, key, pt, data)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{rs: true, key: key}, replaced)
	} else if err != nil {
		c.t.failed(ctx, key, replaced, err)
	}
	return out, err
}

func (c trackingClient) UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	key := keyOf(d)
	replaced := c.t.cachedDeployment(key)
	out, err := c.Client.UpdateDeployment(ctx, d)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{key: key}, replaced)
		c.t.wroteOver(ctx, trackedWrite{key: key}, replaced, d.ResourceVersion)
	}
	return out, err
}

func (c trackingClient) UpdateDeploymentStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	key := keyOf(d)
	replaced := c.t.cachedDeployment(key)
	out, err := c.Client.UpdateDeploymentStatus(ctx, d)
	if err == nil && changed(out, replaced) {
		c.t.wrote(ctx, trackedWrite{key: key}, replaced)
		c.t.wroteOver(ctx, trackedWrite{key: key}, replaced, d.ResourceVersion)
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
