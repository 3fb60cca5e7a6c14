package informer

import (
	"k8s.io/apimachinery/pkg/types"
)

// Wrote tells the cache that this process wrote the object at key through
// the API, replacing the version whose resourceVersion is replaced (the
// one the write was based on). Until an event brings a version it has not
// been told of this way, [Cache.Behind] reports true for key. Controllers
// that share a cache call it after each successful update or patch, so
// that neither they nor the others decide on a version they know to be
// gone. Several writes in a row each name the version they replaced (the
// second one's may be the first one's result): every one of them counts
// as stale until the cache holds a version past them all.
func (c *Cache[T]) Wrote(key types.NamespacedName, replaced string) {
	c.writes.Add(key, replaced)
}

// Behind reports whether the cached object at key is a version that this
// process has already replaced (see [Cache.Wrote]): its event is on the
// way, and a decision taken on the cached copy would be stale, and a write
// based on it would fail with Conflict. A controller can skip the sync and
// wait for that event, which enqueues the key again.
func (c *Cache[T]) Behind(key types.NamespacedName) bool {
	return c.writes.Behind(key, func() (string, bool) {
		obj, err := c.Get(key)
		if err != nil {
			return "", false
		}
		return obj.GetResourceVersion(), true
	})
}
