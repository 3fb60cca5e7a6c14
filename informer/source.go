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
