package informer

import (
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Add stores obj under its namespace and name, replacing any object stored
// there. It fails, leaving the cache unchanged, when obj is nil, has no
// name, or an index function returns an error. The cache keeps obj itself
// (no copy): the caller must not modify it afterwards.
func (c *Cache[T]) Add(obj T) error {
	_, _, err := c.store(obj)
	return c.writeErr("add", err)
}

// writeErr gives err the package and operation prefix, unless it is the
// configuration error, which has its own.
func (c *Cache[T]) writeErr(op string, err error) error {
	if err == nil || err == c.err {
		return err
	}
	return fmt.Errorf("informer: %s: %w", op, err)
}

// Delete removes the object stored under key and returns it. It reports
// false when there was none.
func (c *Cache[T]) Delete(key types.NamespacedName) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removeLocked(key)
}

// Replace makes objs the whole content of the cache, in one step as seen by
// readers. It fails, leaving the cache unchanged, if any object would be
// rejected by [Cache.Add]. When two objects share a key the later wins.
func (c *Cache[T]) Replace(objs []T) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	entries := make([]entry[T], len(objs))
	for i, obj := range objs {
		e, err := c.prepareLocked(obj)
		if err != nil {
			return fmt.Errorf("informer: replace: item %d: %w", i, err)
		}
		entries[i] = e
	}
	c.gen++
	for i := range entries {
		c.upsertLocked(&entries[i])
	}
	c.sweepLocked(nil)
	return nil
}

// store validates and stores obj, returning the object it replaced.
func (c *Cache[T]) store(obj T) (old T, existed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return old, false, c.err
	}
	e, err := c.prepareLocked(obj)
	if err != nil {
		return old, false, err
	}
	old, existed = c.upsertLocked(&e)
	return old, existed, nil
}

// entry is a validated object with everything needed to index it, computed
// before the cache is changed so that a failure leaves it untouched.
type entry[T Object] struct {
	obj  T
	key  types.NamespacedName
	ctrl types.UID  // controller owner UID, "" for none
	vals [][]string // values per user index, parallel to Cache.indexes
}

var errNilObject = errors.New("nil object")

// prepareLocked validates obj and computes its index values. c.mu must be
// held (the user indexes are read), so index functions run under the lock.
func (c *Cache[T]) prepareLocked(obj T) (entry[T], error) {
	if isNil(obj) {
		return entry[T]{}, errNilObject
	}
	e := entry[T]{obj: obj, key: keyOf(obj)}
	if e.key.Name == "" {
		return entry[T]{}, fmt.Errorf("%T in namespace %q has no name", obj, e.key.Namespace)
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		e.ctrl = ref.UID
	}
	if len(c.indexes) > 0 {
		e.vals = make([][]string, len(c.indexes))
		for i, ix := range c.indexes {
			v, err := ix.values(obj)
			if err != nil {
				return entry[T]{}, fmt.Errorf("index %q of %s: %w", ix.name, e.key, err)
			}
			e.vals[i] = v
		}
	}
	return e, nil
}

// upsertLocked stores a prepared entry and returns the object it replaced.
func (c *Cache[T]) upsertLocked(e *entry[T]) (old T, existed bool) {
	nb := c.lastNS
	if nb == nil || nb.ns != e.key.Namespace {
		nb = c.namespaces[e.key.Namespace]
		if nb == nil {
			if c.namespaces == nil {
				c.namespaces = make(map[string]*nsBucket)
			}
			nb = &nsBucket{ns: e.key.Namespace, byName: make(map[string]int32)}
			c.namespaces[e.key.Namespace] = nb
		}
		c.lastNS = nb
	}
	id, existed := nb.byName[e.key.Name]
	if existed {
		s := c.slot(id)
		old = s.obj
		s.obj, s.mark = e.obj, c.gen
	} else {
		id = c.allocSlotLocked()
		*c.slot(id) = slot[T]{obj: e.obj, nsPos: int32(len(nb.ids)), mark: c.gen}
		nb.ids = append(nb.ids, id)
		nb.byName[e.key.Name] = id
		c.size++
	}
	c.setControllerLocked(id, e.ctrl)
	for i, ix := range c.indexes {
		ix.set(id, e.vals[i])
	}
	return old, existed
}

// removeLocked deletes the object stored under key.
func (c *Cache[T]) removeLocked(key types.NamespacedName) (old T, ok bool) {
	nb := c.namespaces[key.Namespace]
	if nb == nil {
		return old, false
	}
	id, ok := nb.byName[key.Name]
	if !ok {
		return old, false
	}
	delete(nb.byName, key.Name)
	s := c.slot(id)
	i, last := s.nsPos, int32(len(nb.ids)-1)
	if i != last {
		moved := nb.ids[last]
		nb.ids[i] = moved
		c.slot(moved).nsPos = i
	}
	nb.ids = nb.ids[:last]
	if last == 0 {
		delete(c.namespaces, key.Namespace)
		if c.lastNS == nb {
			c.lastNS = nil
		}
	}
	c.setControllerLocked(id, "")
	for _, ix := range c.indexes {
		ix.set(id, nil)
	}
	old = s.obj
	*s = slot[T]{nsPos: -1}
	c.free = append(c.free, id)
	c.size--
	c.writes.Forget(key) // a deleted object is nobody's stale copy
	return old, true
}

// sweepLocked removes every object not written since the last c.gen++,
// passing each to dropped (if not nil).
func (c *Cache[T]) sweepLocked(dropped func(T)) {
	for id := range c.nslots {
		s := c.slot(id)
		if s.nsPos < 0 || s.mark == c.gen {
			continue
		}
		// Found by its key, which is only safe because stored objects are
		// read-only; a caller who renamed one leaves it in place.
		if old, ok := c.removeLocked(keyOf(s.obj)); ok && dropped != nil {
			dropped(old)
		}
	}
}

func (c *Cache[T]) allocSlotLocked() int32 {
	if n := len(c.free); n > 0 {
		id := c.free[n-1]
		c.free = c.free[:n-1]
		return id
	}
	id := c.nslots
	if int(id>>pageShift) == len(c.pages) {
		c.pages = append(c.pages, new(page[T]))
	}
	c.nslots++
	return id
}

// setControllerLocked moves slot id into the controller-uid bucket of uid
// ("" for none).
func (c *Cache[T]) setControllerLocked(id int32, uid types.UID) {
	s := c.slot(id)
	if b := s.ctrl; b != nil {
		if b.uid == uid {
			return
		}
		i, last := s.ctrlPos, int32(len(b.ids)-1)
		if i != last {
			moved := b.ids[last]
			b.ids[i] = moved
			c.slot(moved).ctrlPos = i
		}
		b.ids = b.ids[:last]
		if last == 0 {
			delete(c.controllers, b.uid)
			if c.lastCtrl == b {
				c.lastCtrl = nil
			}
		}
		s.ctrl = nil
	}
	if uid == "" {
		return
	}
	b := c.lastCtrl
	if b == nil || b.uid != uid {
		b = c.controllers[uid]
		if b == nil {
			if c.controllers == nil {
				c.controllers = make(map[types.UID]*ctrlBucket)
			}
			b = &ctrlBucket{uid: uid}
			c.controllers[uid] = b
		}
		c.lastCtrl = b
	}
	s.ctrl, s.ctrlPos = b, int32(len(b.ids))
	b.ids = append(b.ids, id)
}

// isNil reports whether obj is a nil interface or a nil pointer (or other
// nil-able kind) wrapped in T; isNilValue does the same for any value.
func isNil[T Object](obj T) bool { return isNilValue(any(obj)) }

func isNilValue(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
