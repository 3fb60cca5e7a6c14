package informer

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// writeMarks remembers, per key, the resourceVersions of cached objects
// that this process has replaced by writes the cache has not seen yet.
// See [Cache.Wrote].
type writeMarks struct {
	replaced map[types.NamespacedName][]string
}

// maxMarks bounds the versions remembered per key: a sync writes an object
// a few times at most before it waits for the events.
const maxMarks = 8

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
	if replaced == "" {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writes.replaced == nil {
		c.writes.replaced = make(map[types.NamespacedName][]string)
	}
	marks := c.writes.replaced[key]
	if slices.Contains(marks, replaced) {
		return
	}
	marks = append(marks, replaced)
	if len(marks) > maxMarks {
		marks = slices.Clone(marks[len(marks)-maxMarks:])
	}
	c.writes.replaced[key] = marks
}

// Behind reports whether the cached object at key is a version that this
// process has already replaced (see [Cache.Wrote]): its event is on the
// way, and a decision taken on the cached copy would be stale, and a write
// based on it would fail with Conflict. A controller can skip the sync and
// wait for that event, which enqueues the key again.
func (c *Cache[T]) Behind(key types.NamespacedName) bool {
	c.wmu.Lock()
	marks := c.writes.replaced[key]
	c.wmu.Unlock()
	if len(marks) == 0 {
		return false
	}
	obj, err := c.Get(key)
	if err == nil && slices.Contains(marks, obj.GetResourceVersion()) {
		return true
	}
	c.forgetWrite(key, marks)
	return false
}

// forgetWrite drops the marks of key if they are still marks (no write
// has been marked since they were read).
func (c *Cache[T]) forgetWrite(key types.NamespacedName, marks []string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if cur := c.writes.replaced[key]; len(cur) == len(marks) && (len(cur) == 0 || &cur[0] == &marks[0]) {
		delete(c.writes.replaced, key)
	}
}
