package writes

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Informers is the [Cache] of the packaged controllers: their informer
// caches, which keep the marks ([informer.Cache.Wrote]) and are shared by
// every controller that runs on them. A nil cache holds nothing.
type Informers struct {
	Deployments *informer.Cache[*appsv1.Deployment]
	ReplicaSets *informer.Cache[*appsv1.ReplicaSet]
}

// Cached implements [Cache].
func (c Informers) Cached(_ context.Context, kind Kind, key types.NamespacedName) (string, types.UID, bool) {
	switch {
	case kind == Deployment && c.Deployments != nil:
		if d, err := c.Deployments.Get(key); err == nil {
			return d.ResourceVersion, d.UID, true
		}
	case kind == ReplicaSet && c.ReplicaSets != nil:
		if rs, err := c.ReplicaSets.Get(key); err == nil {
			return rs.ResourceVersion, rs.UID, true
		}
	}
	return "", "", false
}

// Mark implements [Cache].
func (c Informers) Mark(kind Kind, key types.NamespacedName, replaced string) {
	switch {
	case kind == Deployment && c.Deployments != nil:
		c.Deployments.Wrote(key, replaced)
	case kind == ReplicaSet && c.ReplicaSets != nil:
		c.ReplicaSets.Wrote(key, replaced)
	}
}

// Behind implements [Cache].
func (c Informers) Behind(_ context.Context, kind Kind, key types.NamespacedName) bool {
	switch {
	case kind == Deployment && c.Deployments != nil:
		return c.Deployments.Behind(key)
	case kind == ReplicaSet && c.ReplicaSets != nil:
		return c.ReplicaSets.Behind(key)
	}
	return false
}
