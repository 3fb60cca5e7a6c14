// Package writes lets a controller wait for its own writes: the one
// tracker of the packaged Deployment and ReplicaSet controllers (packages
// deployment and replicaset) and of the controller-runtime adapter. It is
// plumbing, not API: nested modules of this repository may import it,
// users cannot.
//
// A sync that updates a ReplicaSet or a Deployment's status leaves the
// cache behind the API server until the write's event arrives. Upstream
// syncs again at once on whatever event comes first, decides on the stale
// copies, and its writes fail with Conflict (409) or repeat the last one.
// The [Tracker] remembers, per Deployment, the writes its last sync made;
// the next sync is skipped while the cache still holds a version one of
// them replaced, because the event that moves the cache on also enqueues
// the Deployment again (every ReplicaSet or Deployment update does). The
// marks of replaced versions live in the [Cache], shared by both
// controllers: the ReplicaSet controller also sees that a ReplicaSet it is
// about to sync was just scaled, and waits for that event instead of
// writing its status on the old version.
//
// Creates are tracked too (a deliberate difference from upstream, see
// docs/fidelity.md, "Deliberate differences"). A sync that runs before the
// cache has the ReplicaSet the last sync created sees no such ReplicaSet:
// with a new template by then, it takes the created one for missing,
// creates another at full size, and numbers it from a history that lacks
// the first (two full-size ReplicaSets under Recreate, a duplicate
// revision). So the next sync of that Deployment waits until the cache has
// it, or until a live read says it is gone. Failed creates are tracked the
// same way: the error may hide a create that happened (a lost response, a
// timeout).
//
// So are failed ReplicaSet updates and patches (e2e soak seed 3878): a
// scale answered with an error may have happened all the same, and a
// Conflict says that the cached copy it was based on is gone. The next
// sync settles it with a live read: if the API server holds a newer
// version than the cache, the sync waits for its event. Upstream decides
// on the stale spec.replicas, and with a new template by then sizes the
// new ReplicaSet as if the old one had not grown, beyond maxSurge.
//
// Liveness: a write is tracked only when the stored version differs from
// the cached one, so the cache has not seen the server's current version
// yet, and the watch will deliver it (or a later one, or a deletion).
// Deletions are not tracked (deleting an object that is already being
// deleted changes nothing either).
package writes

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/testhooks"
)

// Kind is the kind of a tracked object.
type Kind uint8

// The kinds a controller writes and waits for.
const (
	ReplicaSet Kind = iota
	Deployment
)

// Cache is the cache the controllers read, with the marks of versions
// their writes replaced.
type Cache interface {
	// Cached returns the resourceVersion and UID of the cached object;
	// false when the cache does not hold it.
	Cached(ctx context.Context, kind Kind, key types.NamespacedName) (rv string, uid types.UID, ok bool)
	// Mark records that a write replaced version replaced of the object.
	Mark(kind Kind, key types.NamespacedName, replaced string)
	// Behind reports whether the cached object is a marked version.
	Behind(ctx context.Context, kind Kind, key types.NamespacedName) bool
}

// Live reads a ReplicaSet from the API server, bypassing the cache.
type Live func(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error)

// Tracker remembers the writes of each Deployment's last sync. Create it
// with [New]; it is safe for concurrent use.
type Tracker struct {
	cache Cache
	live  Live

	mu      sync.Mutex
	pending map[types.NamespacedName][]write // by Deployment
}

type write struct {
	kind Kind
	key  types.NamespacedName
	// create marks a ReplicaSet this process created (or may have: uid is
	// empty when the create failed ambiguously).
	create bool
	uid    types.UID
	// failed marks a ReplicaSet update or patch that returned an error;
	// replaced is the cached version it was based on.
	failed   bool
	replaced string
}

// New returns a Tracker over cache; live confirms creates and failed
// writes.
func New(cache Cache, live Live) *Tracker {
	return &Tracker{cache: cache, live: live, pending: make(map[types.NamespacedName][]write)}
}

// syncKey carries the Deployment being synced to the tracking client.
type syncKey struct{}

// Syncing returns ctx for a sync of Deployment d: the writes made with it
// are recorded as d's.
func Syncing(ctx context.Context, d types.NamespacedName) context.Context {
	return context.WithValue(ctx, syncKey{}, d)
}

// Behind reports whether a write of the last sync of d has not reached the
// cache yet; once none is pending it forgets them. A created ReplicaSet
// that the cache lacks is looked up live: if the API server has it, its
// event is on the way; if not (it was deleted before the cache saw it, or
// an ambiguous create did not happen), there is nothing to wait for. An
// error of that read is returned: the caller retries later.
func (t *Tracker) Behind(ctx context.Context, d types.NamespacedName) (bool, error) {
	t.mu.Lock()
	writes := t.pending[d]
	t.mu.Unlock()
	for _, w := range writes {
		switch {
		case w.create && testhooks.ForgetOwnCreates.Load():
		case w.create:
			waiting, err := t.createPending(ctx, w)
			if err != nil || waiting {
				return waiting, err
			}
		case w.failed:
			waiting, err := t.writePending(ctx, w)
			if err != nil || waiting {
				if waiting {
					// From now on the ReplicaSet controller waits for it too.
					t.cache.Mark(ReplicaSet, w.key, w.replaced)
				}
				return waiting, err
			}
		case t.cache.Behind(ctx, w.kind, w.key):
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

// createPending reports whether the ReplicaSet w created is on the API
// server but not in the cache yet. A ReplicaSet that is gone, or whose
// name another has taken, is nothing to wait for.
func (t *Tracker) createPending(ctx context.Context, w write) (bool, error) {
	if _, got, ok := t.cache.Cached(ctx, ReplicaSet, w.key); ok && (w.uid == "" || got == w.uid) {
		return false, nil
	}
	rs, err := t.read(ctx, w.key, "the create")
	switch {
	case err != nil || rs == nil:
		return false, err
	case w.uid != "" && rs.UID != w.uid:
		return false, nil // ours is gone; another took its name
	}
	if _, got, ok := t.cache.Cached(ctx, ReplicaSet, w.key); ok && got == rs.UID {
		return false, nil // the event arrived meanwhile
	}
	return true, nil
}

// writePending reports whether the failed update or patch w has left the
// cache behind the API server. The error of a write may hide a write that
// happened (a lost response, a timeout), and a Conflict means that the
// version it was based on is gone: either way the cache may hold a
// spec.replicas the API server no longer has, and a rollout step sized on
// it can go beyond maxSurge. There is nothing to wait for once the cache
// holds another version, or when the API server has none other (the write
// did not happen) or none at all (a deletion's event is on its way
// anyway).
func (t *Tracker) writePending(ctx context.Context, w write) (bool, error) {
	if rv, _, ok := t.cache.Cached(ctx, ReplicaSet, w.key); !ok || rv != w.replaced || w.replaced == "" {
		return false, nil
	}
	rs, err := t.read(ctx, w.key, "a write")
	switch {
	case err != nil || rs == nil:
		return false, err
	case rs.ResourceVersion == w.replaced:
		return false, nil // it did not happen, and nothing else did
	}
	if rv, _, ok := t.cache.Cached(ctx, ReplicaSet, w.key); !ok || rv != w.replaced {
		return false, nil // the event arrived meanwhile
	}
	return true, nil
}

// read reads the ReplicaSet key live to confirm what (a create, a write);
// nil and no error when it is gone.
func (t *Tracker) read(ctx context.Context, key types.NamespacedName, what string) (*appsv1.ReplicaSet, error) {
	rs, err := t.live(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("deployment: confirming %s of ReplicaSet %s: %w", what, key, err)
	case rs == nil:
		return nil, fmt.Errorf("deployment: confirming %s of ReplicaSet %s: the live read returned nothing", what, key)
	}
	return rs, nil
}

// record adds w to the writes of the Deployment synced in ctx.
func (t *Tracker) record(ctx context.Context, w write) {
	d, ok := ctx.Value(syncKey{}).(types.NamespacedName)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[d] = append(t.pending[d], w)
}

// Version returns the resourceVersion of the cached object, or "". A
// tracking client reads it before a write: read after, it could already be
// the write's own event.
func (t *Tracker) Version(ctx context.Context, kind Kind, key types.NamespacedName) string {
	rv, _, _ := t.cache.Cached(ctx, kind, key)
	return rv
}

// Created records a ReplicaSet created (uid set) or maybe created (uid
// empty: the create failed, maybe ambiguously) while syncing the
// Deployment in ctx.
func (t *Tracker) Created(ctx context.Context, key types.NamespacedName, uid types.UID) {
	t.record(ctx, write{kind: ReplicaSet, key: key, create: true, uid: uid})
}

// Wrote records an update or patch of the object that stored version out
// while syncing the Deployment in ctx (nothing outside a sync); replaced is the cached version before the write. based, if not
// empty, is the version the write was based on: when it is another one,
// it is the result of an earlier write of the same sync, which the cache
// has not seen either (e2e soak seed 4019: a rolling step scales an old
// ReplicaSet down twice, 4 → 3 → 1, and the cache must wait for the second
// write's event, not the first's). An update that changed nothing stored
// no new version and sends no event: waiting for one would wait forever,
// so it is not recorded.
func (t *Tracker) Wrote(ctx context.Context, kind Kind, key types.NamespacedName, replaced, out, based string) {
	if _, ok := ctx.Value(syncKey{}).(types.NamespacedName); !ok || !Mark(t.cache, kind, key, replaced, out, based) {
		return
	}
	t.record(ctx, write{kind: kind, key: key})
}

// Mark marks the object in c as a write that stored version out replaced
// replaced (and based, see [Tracker.Wrote]); false when there is nothing
// to wait for: no cached version, or the same one stored. A write that
// stored nothing new over an earlier write of the sync (out is based)
// waits for the earlier write's event only: based is where the cache
// stops, and no later event would move it on.
func Mark(c Cache, kind Kind, key types.NamespacedName, replaced, out, based string) bool {
	if replaced == "" || out == replaced {
		return false
	}
	c.Mark(kind, key, replaced)
	if based != "" && based != replaced && based != out {
		c.Mark(kind, key, based)
	}
	return true
}

// Failed records a ReplicaSet update or patch that returned err, made
// while syncing the Deployment in ctx; replaced is the cached version
// before it. Errors that say the request never reached storage leave
// nothing to settle (see [MayHaveChanged]).
func (t *Tracker) Failed(ctx context.Context, key types.NamespacedName, replaced string, err error) {
	if replaced == "" || !MayHaveChanged(err) {
		return
	}
	t.record(ctx, write{kind: ReplicaSet, key: key, failed: true, replaced: replaced})
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
