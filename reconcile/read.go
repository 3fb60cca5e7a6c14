package reconcile

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/indexes"
)

// Getter reads one object by key. A missing object is an error for which
// apierrors.IsNotFound holds.
type Getter[T any] interface {
	Get(ctx context.Context, key types.NamespacedName) (T, error)
}

// Lister lists the objects of a namespace ("" for every namespace) whose
// labels match selector; a nil selector matches everything.
type Lister[T any] interface {
	List(ctx context.Context, namespace string, selector labels.Selector) ([]T, error)
}

// Reader is a [Getter] and a [Lister] of the same objects.
type Reader[T any] interface {
	Getter[T]
	Lister[T]
}

// ByController lists objects by their controller: with a non-empty uid,
// the objects whose controller reference has that UID (the caller filters
// by namespace, as a controller reference cannot cross namespaces); with
// an empty uid, the objects of namespace without a controller (orphans).
// It lets a controller read what a sync can depend on through indexes
// instead of listing a whole namespace.
type ByController[T any] interface {
	ListByController(ctx context.Context, namespace string, uid types.UID) ([]T, error)
}

// GetterFunc adapts a function to [Getter].
type GetterFunc[T any] func(ctx context.Context, key types.NamespacedName) (T, error)

// Get calls f(ctx, key).
func (f GetterFunc[T]) Get(ctx context.Context, key types.NamespacedName) (T, error) {
	return f(ctx, key)
}

// ListerFunc adapts a function to [Lister].
type ListerFunc[T any] func(ctx context.Context, namespace string, selector labels.Selector) ([]T, error)

// List calls f(ctx, namespace, selector).
func (f ListerFunc[T]) List(ctx context.Context, namespace string, selector labels.Selector) ([]T, error) {
	return f(ctx, namespace, selector)
}

// ByControllerFunc adapts a function to [ByController].
type ByControllerFunc[T any] func(ctx context.Context, namespace string, uid types.UID) ([]T, error)

// ListByController calls f(ctx, namespace, uid).
func (f ByControllerFunc[T]) ListByController(ctx context.Context, namespace string, uid types.UID) ([]T, error) {
	return f(ctx, namespace, uid)
}

// EventRecorder records an event about obj; client-go's
// record.EventRecorder and controller-runtime's manager recorder satisfy
// it. Implementations must be safe for concurrent use and must not block
// for long. The controllers treat a nil EventRecorder as one that
// discards.
type EventRecorder interface {
	Event(obj runtime.Object, eventType, reason, message string)
}

// EventRecorderFunc adapts a function to [EventRecorder].
type EventRecorderFunc func(obj runtime.Object, eventType, reason, message string)

// Event calls f.
func (f EventRecorderFunc) Event(obj runtime.Object, eventType, reason, message string) {
	f(obj, eventType, reason, message)
}

// CacheReader reads an [informer.Cache] through the interfaces of this
// package: it is a [Reader] and a [ByController]. The context is not
// used (the cache is in memory). Create it with [FromCache].
type CacheReader[T informer.Object] struct {
	c *informer.Cache[T]
}

// FromCache returns a [CacheReader] over c, adding to c an index of the
// objects without a controller reference, by namespace (for
// [CacheReader.ListByController] with an empty uid), unless it is there (on a cache that already holds objects, adding an
// index indexes each of them once).
func FromCache[T informer.Object](c *informer.Cache[T]) (*CacheReader[T], error) {
	if c == nil {
		return nil, fmt.Errorf("reconcile: FromCache: nil cache")
	}
	if !slices.Contains(c.IndexNames(), indexes.Orphans) {
		err := c.AddIndex(indexes.Orphans, func(obj T) ([]string, error) {
			if metav1.GetControllerOfNoCopy(obj) != nil {
				return nil, nil
			}
			return []string{obj.GetNamespace()}, nil
		})
		// Two callers may race to add it; losing that race is fine.
		if err != nil && !slices.Contains(c.IndexNames(), indexes.Orphans) {
			return nil, fmt.Errorf("reconcile: FromCache: %w", err)
		}
	}
	return &CacheReader[T]{c: c}, nil
}

// Cache returns the cache r reads.
func (r *CacheReader[T]) Cache() *informer.Cache[T] { return r.c }

// Get returns the cached object at key.
func (r *CacheReader[T]) Get(_ context.Context, key types.NamespacedName) (T, error) {
	return r.c.Get(key)
}

// List lists the cached objects of namespace that match selector.
func (r *CacheReader[T]) List(_ context.Context, namespace string, selector labels.Selector) ([]T, error) {
	return r.c.List(namespace, selector)
}

// ListByController lists the cached objects controlled by uid (any
// namespace), or with an empty uid the orphans of namespace.
func (r *CacheReader[T]) ListByController(_ context.Context, namespace string, uid types.UID) ([]T, error) {
	if uid == "" {
		return r.c.ByIndex(indexes.Orphans, namespace)
	}
	return r.c.ByIndex(informer.IndexControllerUID, string(uid))
}
