package informer

import (
	"github.com/ctrlkit/ctrlkit/internal/marks"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// CacheConfig configures a [Cache]. The zero value is ready to use.
type CacheConfig[T Object] struct {
	// Resource names the objects in the NotFound errors returned by
	// [Cache.Get], e.g. {Group: "apps", Resource: "replicasets"}. Zero:
	// a best-effort guess from T's type name ("Pod" → "pods").
	Resource schema.GroupResource

	// Indexers are extra indexes, by name, queried with [Cache.ByIndex].
	// Names must not be empty or one of the built-in [IndexNamespace] and
	// [IndexControllerUID], and functions must not be nil. An invalid entry
	// makes every write to the cache (and [Informer.Run]) return an error.
	Indexers map[string]IndexFunc[T]
}

// Cache is a thread-safe, indexed, in-memory store of objects keyed by
// namespace and name. Its zero value is an empty cache with the built-in
// indexes; use [NewCache] to add indexes or name the resource.
//
// Objects returned by Get, List and ByIndex are the stored objects
// themselves, shared with every other reader. They are read-only: callers
// must not modify them (DeepCopy first). Writing to a returned object
// corrupts what everyone else sees and can desynchronise the indexes.
//
// Results come back in an order that depends only on the history of
// writes, so a replayed history lists identically, but they are not sorted:
// sort them yourself if order matters.
type Cache[T Object] struct {
	resource schema.GroupResource
	err      error // configuration error, returned by every write

	mu          sync.RWMutex
	pages       []*page[T] // slots by id, in pages that never move
	nslots      int32      // slots handed out so far; a free one has nsPos < 0
	free        []int32    // ids of free slots, reused before new ones
	size        int        // live slots
	gen         uint32     // replace generation, see slot.mark
	namespaces  map[string]*nsBucket
	controllers map[types.UID]*ctrlBucket
	indexes     []*userIndex[T]

	// The buckets of the last write. Lists arrive grouped by namespace and
	// owner, so most writes skip a map lookup.
	lastNS   *nsBucket
	lastCtrl *ctrlBucket

	writes marks.Set[types.NamespacedName] // versions this process's writes replaced
}

// Slots live in fixed-size pages: growing the cache never copies them.
const (
	pageShift = 8
	pageSize  = 1 << pageShift
)

type page[T Object] [pageSize]slot[T]

// slot returns the slot with the given id.
func (c *Cache[T]) slot(id int32) *slot[T] {
	return &c.pages[id>>pageShift][id&(pageSize-1)]
}

// slot holds one stored object and its positions in the built-in indexes,
// so that removing it from them takes constant time.
type slot[T Object] struct {
	obj     T
	ctrl    *ctrlBucket // controller-uid bucket holding this slot; nil without a controller
	nsPos   int32       // position in the namespace bucket's ids; -1 when free
	ctrlPos int32       // position in ctrl.ids
	mark    uint32      // generation of the last write, for Replace's sweep
}

// nsBucket holds the objects of one namespace.
type nsBucket struct {
	ns     string
	byName map[string]int32 // name → slot id
	ids    []int32          // slot ids, in listing order
}

// ctrlBucket holds the objects of one controller.
type ctrlBucket struct {
	uid types.UID
	ids []int32 // slot ids, in listing order
}

// NewCache returns an empty cache configured by cfg.
func NewCache[T Object](cfg CacheConfig[T]) *Cache[T] {
	c := &Cache[T]{resource: cfg.Resource}
	if c.resource.Empty() {
		c.resource = guessResource[T]()
	}
	names := make([]string, 0, len(cfg.Indexers))
	for name := range cfg.Indexers {
		names = append(names, name)
	}
	// Sorted so that the set of indexes, and the first error, do not depend
	// on map order.
	slices.Sort(names)
	for _, name := range names {
		if err := c.AddIndex(name, cfg.Indexers[name]); err != nil {
			c.err = err
			break
		}
	}
	return c
}

// Get returns the object stored under key. A missing object is reported
// with an error that satisfies [apierrors.IsNotFound]. The object is shared
// and read-only.
func (c *Cache[T]) Get(key types.NamespacedName) (T, error) {
	c.mu.RLock()
	if nb := c.namespaces[key.Namespace]; nb != nil {
		if id, ok := nb.byName[key.Name]; ok {
			obj := c.slot(id).obj
			c.mu.RUnlock()
			return obj, nil
		}
	}
	c.mu.RUnlock()
	var zero T
	return zero, apierrors.NewNotFound(c.resourceName(), key.Name)
}

// List returns the objects in namespace whose labels match selector.
// Namespace "" means every namespace, and a nil selector matches everything.
// The error is always nil; it is there so that a Cache satisfies lister
// interfaces shaped like client-go's. The objects are shared and read-only.
func (c *Cache[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	filter := selector != nil && !selector.Empty()
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.size
	if namespace != "" {
		n = 0
		if nb := c.namespaces[namespace]; nb != nil {
			n = len(nb.ids)
		}
	}
	if n == 0 {
		return nil, nil
	}
	var dst []T
	if !filter {
		dst = make([]T, 0, n)
	}
	return c.appendListLocked(dst, namespace, selector, filter), nil
}

// AppendList appends the objects List would return to dst and returns the
// extended slice. It allocates nothing when dst has room for the result.
func (c *Cache[T]) AppendList(dst []T, namespace string, selector labels.Selector) []T {
	filter := selector != nil && !selector.Empty()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.appendListLocked(dst, namespace, selector, filter)
}

func (c *Cache[T]) appendListLocked(dst []T, namespace string, selector labels.Selector, filter bool) []T {
	if namespace != "" {
		if nb := c.namespaces[namespace]; nb != nil {
			dst = c.appendIDsLocked(dst, nb.ids, selector, filter)
		}
		return dst
	}
	for id := range c.nslots {
		s := c.slot(id)
		if s.nsPos < 0 || filter && !selector.Matches(labels.Set(s.obj.GetLabels())) {
			continue
		}
		dst = append(dst, s.obj)
	}
	return dst
}

func (c *Cache[T]) appendIDsLocked(dst []T, ids []int32, selector labels.Selector, filter bool) []T {
	if !filter {
		for _, id := range ids {
			dst = append(dst, c.slot(id).obj)
		}
		return dst
	}
	for _, id := range ids {
		obj := c.slot(id).obj
		if selector.Matches(labels.Set(obj.GetLabels())) {
			dst = append(dst, obj)
		}
	}
	return dst
}

// Len returns the number of stored objects.
func (c *Cache[T]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.size
}

// Keys returns the keys of all stored objects, in listing order.
func (c *Cache[T]) Keys() []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]types.NamespacedName, 0, c.size)
	for id := range c.nslots {
		if s := c.slot(id); s.nsPos >= 0 {
			keys = append(keys, keyOf(s.obj))
		}
	}
	return keys
}

func (c *Cache[T]) resourceName() schema.GroupResource {
	if c.resource.Empty() {
		return guessResource[T]()
	}
	return c.resource
}

func keyOf[T Object](obj T) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// guessResource turns T's type name into a lower-case plural resource name,
// which is right for the common kinds (Pod, ReplicaSet, Deployment, Ingress,
// NetworkPolicy) and only a hint for the others.
func guessResource[T Object]() schema.GroupResource {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := strings.ToLower(t.Name())
	switch {
	case name == "":
		return schema.GroupResource{Resource: "objects"}
	case strings.HasSuffix(name, "s"), strings.HasSuffix(name, "x"),
		strings.HasSuffix(name, "ch"), strings.HasSuffix(name, "sh"):
		name += "es"
	case strings.HasSuffix(name, "y") && len(name) > 1 && !strings.ContainsRune("aeiou", rune(name[len(name)-2])):
		name = name[:len(name)-1] + "ies"
	default:
		name += "s"
	}
	return schema.GroupResource{Resource: name}
}
