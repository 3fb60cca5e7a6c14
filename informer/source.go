package informer

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Object is what a [Cache] stores: a pointer to an API type such as
// *corev1.Pod, which carries both object metadata and a runtime type.
type Object interface {
	metav1.Object
	runtime.Object
}

// ListWatcher is the source an [Informer] reads from: anything that can list
// and watch objects of type T. A typed client-go client, an in-memory
// cluster or a test fake can all be adapted to it, usually with
// [ListWatchFuncs].
//
// List returns every object and the resource version the list was read at.
// The informer takes ownership of the returned slice but never writes to it.
//
// Watch streams changes that happened after resourceVersion. Events of type
// [watch.Added], [watch.Modified] and [watch.Deleted] carry a T;
// [watch.Bookmark] events carry an object whose only meaningful field is its
// resource version; [watch.Error] events carry a *metav1.Status. A watch
// that can no longer serve resourceVersion reports it as a 410 (reason
// Expired or Gone), either as Watch's error or as an Error event; the
// informer then lists again.
type ListWatcher[T Object] interface {
	List(ctx context.Context) (items []T, resourceVersion string, err error)
	Watch(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

// ListWatchFuncs adapts two functions to a [ListWatcher]. A nil function
// makes the corresponding method return an error.
type ListWatchFuncs[T Object] struct {
	ListFunc  func(ctx context.Context) (items []T, resourceVersion string, err error)
	WatchFunc func(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

var _ ListWatcher[*metav1.PartialObjectMetadata] = ListWatchFuncs[*metav1.PartialObjectMetadata]{}

// List calls f.ListFunc.
func (f ListWatchFuncs[T]) List(ctx context.Context) ([]T, string, error) {
	if f.ListFunc == nil {
		return nil, "", errors.New("informer: ListWatchFuncs.ListFunc is nil")
	}
	return f.ListFunc(ctx)
}

// Watch calls f.WatchFunc.
func (f ListWatchFuncs[T]) Watch(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	if f.WatchFunc == nil {
		return nil, errors.New("informer: ListWatchFuncs.WatchFunc is nil")
	}
	return f.WatchFunc(ctx, resourceVersion)
}

// AckWatcher is a watch that tracks each event it delivers as work on a
// fake clock (see [clock.Source]) until its consumer says it has handled
// the event, rather than only until the event is received. memcluster's
// watches implement it. The informer calls AckEvents once, before it reads
// the first event, then Ack after each event it has applied to its cache
// and handed to its handlers, and Stop when it is done with the watch,
// after it has taken work of its own for what follows; Stop finishes
// whatever is not acknowledged, including the end of the watch.
//
// A consumer that never calls AckEvents gets the default: the work of an
// event ends when the event is received.
type AckWatcher interface {
	watch.Interface
	// AckEvents makes every event's work last until its Ack.
	AckEvents()
	// Ack ends the work of the oldest unacknowledged event.
	Ack()
}

// SharingWatcher is a watch that can deliver its source's own objects
// instead of private copies, to a consumer that never modifies them. The
// informer, whose cache hands out shared read-only objects anyway, calls
// ShareObjects once before it reads the first event if it has no
// [Config.Transform] (which may modify what it is given); a source that
// implements it (memcluster's watches do) then saves a deep copy of every
// event and the memory of a second copy of every object. Everything in
// the informer that reads these objects must treat them as read-only, as
// the cache's documentation already requires.
type SharingWatcher interface {
	watch.Interface
	// ShareObjects lets the watch deliver objects that are not the
	// consumer's own.
	ShareObjects()
}
