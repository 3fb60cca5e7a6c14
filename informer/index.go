package informer

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Names of the built-in indexes, present in every [Cache].
const (
	// IndexNamespace indexes objects by namespace ("" for cluster-scoped
	// objects). ByIndex(IndexNamespace, ns) is List(ns, nil), except that
	// "" means cluster-scoped objects rather than all of them.
	IndexNamespace = "namespace"
	// IndexControllerUID indexes objects by the UID of their controller
	// owner ([metav1.GetControllerOf]); objects without one are not in it.
	// It answers "which Pods does this ReplicaSet own?" without a scan.
	IndexControllerUID = "controller-uid"
)

// IndexFunc computes the values under which obj is indexed. It must be a
// pure function of obj: fast, deterministic, and not calling back into the
// cache (it runs under the cache's write lock). Duplicate values are
// ignored. An error rejects the object: the write that offered it fails and
// the cache keeps its previous state.
type IndexFunc[T Object] func(obj T) ([]string, error)

// userIndex is an index defined with AddIndex or CacheConfig.Indexers.
type userIndex[T Object] struct {
	name    string
	fn      IndexFunc[T]
	buckets map[string]*bucket
	vals    [][]string // values by slot id, to unindex without calling fn again
}

// values calls the index function and drops duplicate values.
func (ix *userIndex[T]) values(obj T) ([]string, error) {
	v, err := ix.fn(obj)
	if err != nil || len(v) < 2 {
		return v, err
	}
	for i := 1; i < len(v); i++ {
		if slices.Contains(v[:i], v[i]) {
			// Copy rather than compact in place: the function may return a
			// slice it shares.
			out := make([]string, 0, len(v))
			for _, s := range v {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out, nil
		}
	}
	return v, nil
}

// set files slot id under vals, removing it from its previous buckets.
func (ix *userIndex[T]) set(id int32, vals []string) {
	if int(id) >= len(ix.vals) {
		if len(vals) == 0 {
			return
		}
		ix.vals = append(ix.vals, make([][]string, int(id)+1-len(ix.vals))...)
	}
	old := ix.vals[id]
	if slices.Equal(old, vals) {
		return
	}
	for _, v := range old {
		if b := ix.buckets[v]; b.remove(id) {
			delete(ix.buckets, v)
		}
	}
	for _, v := range vals {
		b := ix.buckets[v]
		if b == nil {
			b = &bucket{key: v}
			ix.buckets[v] = b
		}
		b.add(id)
	}
	ix.vals[id] = vals
}

// AddIndex adds an index named name. It may be called at any time: the
// objects already stored are indexed before AddIndex returns. It fails,
// leaving the cache unchanged, when name is empty, built in or already
// used, fn is nil, or fn returns an error for a stored object.
func (c *Cache[T]) AddIndex(name string, fn IndexFunc[T]) error {
	switch {
	case name == "":
		return errors.New("informer: add index: empty name")
	case name == IndexNamespace || name == IndexControllerUID:
		return fmt.Errorf("informer: add index %q: name is built in", name)
	case fn == nil:
		return fmt.Errorf("informer: add index %q: nil IndexFunc", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.userIndexLocked(name) != nil {
		return fmt.Errorf("informer: add index %q: already exists", name)
	}
	ix := &userIndex[T]{name: name, fn: fn, buckets: make(map[string]*bucket)}
	vals := make([][]string, c.nslots)
	for id := range c.nslots {
		s := c.slot(id)
		if s.nsPos < 0 {
			continue
		}
		v, err := ix.values(s.obj)
		if err != nil {
			return fmt.Errorf("informer: add index %q: %s: %w", name, keyOf(s.obj), err)
		}
		vals[id] = v
	}
	for id, v := range vals {
		ix.set(int32(id), v)
	}
	c.indexes = append(c.indexes, ix)
	return nil
}

// ByIndex returns the objects filed under value in the named index, or an
// error if there is no such index. The objects are shared and read-only.
func (c *Cache[T]) ByIndex(index, value string) ([]T, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids, err := c.indexIDsLocked(index, value)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return c.appendIDsLocked(make([]T, 0, len(ids)), ids, nil, false), nil
}

// AppendByIndex appends the objects ByIndex would return to dst and returns
// the extended slice. It allocates nothing when dst has room for the result.
func (c *Cache[T]) AppendByIndex(dst []T, index, value string) ([]T, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids, err := c.indexIDsLocked(index, value)
	if err != nil {
		return dst, err
	}
	return c.appendIDsLocked(dst, ids, nil, false), nil
}

// IndexNames returns the names of all indexes, built-in ones first.
func (c *Cache[T]) IndexNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := []string{IndexNamespace, IndexControllerUID}
	for _, ix := range c.indexes {
		names = append(names, ix.name)
	}
	return names
}

func (c *Cache[T]) indexIDsLocked(index, value string) ([]int32, error) {
	switch index {
	case IndexNamespace:
		if nb := c.namespaces[value]; nb != nil {
			return nb.ids, nil
		}
		return nil, nil
	case IndexControllerUID:
		if b := c.controllers[types.UID(value)]; b != nil {
			return b.ids, nil
		}
		return nil, nil
	}
	ix := c.userIndexLocked(index)
	if ix == nil {
		return nil, fmt.Errorf("informer: no index named %q", index)
	}
	if b := ix.buckets[value]; b != nil {
		return b.ids, nil
	}
	return nil, nil
}

func (c *Cache[T]) userIndexLocked(name string) *userIndex[T] {
	for _, ix := range c.indexes {
		if ix.name == name {
			return ix
		}
	}
	return nil
}

// bucket is the set of slot ids filed under one value of a user index (an
// object can be under several, so positions cannot live in its slot). Small buckets
// find an id to remove by scanning; once a bucket outgrows linearMax it
// keeps a position map so that removal stays O(1) however large it gets.
type bucket struct {
	key string
	ids []int32
	pos map[int32]int32 // id → index in ids; nil while small
}

const linearMax = 32

func (b *bucket) add(id int32) {
	if b.pos != nil {
		b.pos[id] = int32(len(b.ids))
	}
	b.ids = append(b.ids, id)
	if b.pos == nil && len(b.ids) > linearMax {
		b.pos = make(map[int32]int32, len(b.ids))
		for i, x := range b.ids {
			b.pos[x] = int32(i)
		}
	}
}

// remove takes id out of the bucket and reports whether the bucket is now
// empty.
func (b *bucket) remove(id int32) (empty bool) {
	var i int
	if b.pos != nil {
		p, ok := b.pos[id]
		if !ok {
			return len(b.ids) == 0
		}
		i = int(p)
		delete(b.pos, id)
	} else if i = slices.Index(b.ids, id); i < 0 {
		return len(b.ids) == 0
	}
	last := len(b.ids) - 1
	if i != last {
		moved := b.ids[last]
		b.ids[i] = moved
		if b.pos != nil {
			b.pos[moved] = int32(i)
		}
	}
	b.ids = b.ids[:last]
	return last == 0
}
