package informer

import "k8s.io/apimachinery/pkg/types"

// writeMarks remembers, per key, the resourceVersion of a cached object
// that this process has replaced by a write the cache has not seen yet.
// See [Cache.Wrote].
type writeMarks struct {
	replaced map[types.NamespacedName]string
}

// Wrote tells the cache that this process wrote the object at key through
// the API, replacing the version whose resourceVersion is replaced (the
// one the write was based on). Until an event brings a newer version,
// [Cache.Behind] reports true for key. Controllers that share a cache
// call it after each successful update or patch, so that neither they
// nor the others decide on a version they know to be gone.
func (c *Cache[T]) Wrote(key types.NamespacedName, replaced string) {
	if replaced == "" {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writes.replaced == nil {
		c.writes.replaced = make(map[types.NamespacedName]string)
	}
	c.writes.replaced[key] = replaced
}

// Behind reports whether the cached object at key is a version that this
// process has already replaced (see [Cache.Wrote]): its event is on the
// way, and a decision taken on the cached copy would be stale, and a write
// based on it would fail with Conflict. A controller can skip the sync and
// wait for that event, which enqueues the key again.
func (c *Cache[T]) Behind(key types.NamespacedName) bool {
	c.wmu.Lock()
	replaced, ok := c.writes.replaced[key]
	c.wmu.Unlock()
	if !ok {
		return false
	}
	obj, err := c.Get(key)
	if err == nil && obj.GetResourceVersion() == replaced {
		return true
	}
	c.forgetWrite(key, replaced)
	return false
}

// forgetWrite drops the mark of key if it still says replaced.
func (c *Cache[T]) forgetWrite(key types.NamespacedName, replaced string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writes.replaced[key] == replaced {
		delete(c.writes.replaced, key)
	}
}
