package replicaset_test

import (
	"context"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fakewatch"
)

// logEntry is one change, for replay to watches that start behind.
type logEntry struct {
	rv int
	ev watch.Event
}

func (w *world) emitLocked(typ watch.EventType, obj runtime.Object) {
	e := logEntry{rv: w.rv, ev: watch.Event{Type: typ, Object: obj}}
	w.log = append(w.log, e)
	w.watchers = slices.DeleteFunc(w.watchers, func(fw worldWatch) bool { return fw.Stopped() })
	for _, fw := range w.watchers {
		if fw.accept(obj) {
			fw.Action(typ, obj)
		}
	}
}

// worldWatch is a watch of the world: a fake watch on the world's clock,
// whose events are tracked work until the informer has applied them, and
// the type of objects it carries.
type worldWatch struct {
	*fakewatch.Watch
	accept func(runtime.Object) bool
}

// watchFrom returns a watch that replays every change after rv of objects
// of type T and then follows new ones.
func watchFrom[T runtime.Object](w *world, rv string) (watch.Interface, error) {
	from, err := strconv.Atoi(rv)
	if err != nil {
		return nil, apierrors.NewBadRequest("bad resourceVersion " + rv)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fw := worldWatch{
		Watch:  fakewatch.New(w.clock, "world watch"),
		accept: func(o runtime.Object) bool { _, ok := o.(T); return ok },
	}
	for _, e := range w.log {
		if e.rv > from && fw.accept(e.ev.Object) {
			fw.Action(e.ev.Type, e.ev.Object)
		}
	}
	w.watchers = append(w.watchers, fw)
	return fw, nil
}

// podSource and rsSource are the ListWatchers informers read the world from.
func (w *world) podSource() informer.ListWatcher[*corev1.Pod] {
	return informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(context.Context) ([]*corev1.Pod, string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			out := make([]*corev1.Pod, 0, len(w.pods))
			for _, p := range w.pods {
				out = append(out, p)
			}
			return out, strconv.Itoa(w.rv), nil
		},
		WatchFunc: func(_ context.Context, rv string) (watch.Interface, error) { return watchFrom[*corev1.Pod](w, rv) },
	}
}

func (w *world) rsSource() informer.ListWatcher[*appsv1.ReplicaSet] {
	return informer.ListWatchFuncs[*appsv1.ReplicaSet]{
		ListFunc: func(context.Context) ([]*appsv1.ReplicaSet, string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			out := make([]*appsv1.ReplicaSet, 0, len(w.rss))
			for _, rs := range w.rss {
				out = append(out, rs)
			}
			return out, strconv.Itoa(w.rv), nil
		},
		WatchFunc: func(_ context.Context, rv string) (watch.Interface, error) {
			return watchFrom[*appsv1.ReplicaSet](w, rv)
		},
	}
}
