package memcluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// ErrWatchExpired is what a [Gate] returns from Enter, for a watch
// delivery, to expire that watch: instead of the event, the watcher gets
// a 410 Expired ERROR event ("too old resource version") and the watch
// ends, as kube-apiserver ends a watch whose resourceVersion was
// compacted away. A reflector then lists again and watches from the
// list: the events it had not received yet are not replayed one by one,
// only the state the list shows (a deleted object is gone, the updates
// between collapse into one).
var ErrWatchExpired = errors.New("memcluster: watch expired at the gate")

// sendExpired delivers the 410 ERROR event that ends a watch the gate
// expired before the delivery of rv.
func (w *watcher[T]) sendExpired(ctx context.Context, rv string) {
	w.r.c.mu.Lock()
	cur := w.r.c.rv
	w.r.c.mu.Unlock()
	st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%d)", rv, cur)).ErrStatus
	select {
	case w.result <- watch.Event{Type: watch.Error, Object: &st}:
	case <-w.stop:
	case <-ctx.Done():
	}
}
