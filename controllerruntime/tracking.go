package controllerruntime

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/internal/marks"
	"github.com/ctrlkit/ctrlkit/internal/writes"
)

// markKey names a tracked object: a ReplicaSet, or a Deployment.
type markKey struct {
	kind writes.Kind
	key  types.NamespacedName
}

// writeMarks is the manager's cache as the controllers' write tracker
// sees it (internal/writes.Cache): the controllers wait for their own
// writes over a controller-runtime cache as ctrlkit's packaged controllers
// do over theirs, by the same rules (see the package documentation).
// Both controllers of one manager share it.
type writeMarks struct {
	cache client.Reader
	set   marks.Set[markKey]
}

func newWriteMarks(cache client.Reader) *writeMarks { return &writeMarks{cache: cache} }

// Cached implements writes.Cache.
func (m *writeMarks) Cached(ctx context.Context, kind writes.Kind, key types.NamespacedName) (string, types.UID, bool) {
	var obj client.Object = &appsv1.ReplicaSet{}
	if kind == writes.Deployment {
		obj = &appsv1.Deployment{}
	}
	if err := m.cache.Get(ctx, key, obj); err != nil {
		return "", "", false
	}
	return obj.GetResourceVersion(), obj.GetUID(), true
}

// Mark implements writes.Cache.
func (m *writeMarks) Mark(kind writes.Kind, key types.NamespacedName, replaced string) {
	m.set.Add(markKey{kind, key}, replaced)
}

// Behind implements writes.Cache.
func (m *writeMarks) Behind(ctx context.Context, kind writes.Kind, key types.NamespacedName) bool {
	return m.set.Behind(markKey{kind, key}, func() (string, bool) {
		rv, _, ok := m.Cached(ctx, kind, key)
		return rv, ok
	})
}

// live reads ReplicaSets from r, bypassing the cache.
func live(r client.Reader) writes.Live {
	return func(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
		rs := &appsv1.ReplicaSet{}
		if err := r.Get(ctx, key, rs); err != nil {
			return nil, err
		}
		return rs, nil
	}
}
