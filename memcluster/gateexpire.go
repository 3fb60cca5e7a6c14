package memcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

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
