package informer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/watchproto"
)

const (
	backoffBase = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
	// A watch that lasted this long, or delivered any event, was healthy:
	// its end resets the backoff.
	healthyWatch = time.Minute
)

// backoff returns how long to wait before the next attempt after the given
// number of consecutive failures: nothing after the first, so that a single
// hiccup is retried at once, then a random
// duration in [d/2, d] where d doubles from backoffBase up to backoffMax.
func backoff(rnd *rand.Rand, failures int) time.Duration {
	if failures <= 1 {
		return 0
	}
	d := backoffMax
	if shift := failures - 2; shift < 16 {
		d = min(backoffBase<<shift, backoffMax)
	}
	return d/2 + time.Duration(rnd.Int64N(int64(d/2)+1))
}

// newJitter returns the random source of the backoff: seeded from the
// informer's name on a fake clock or when seeded is set, so that
// simulations replay exactly, and at random otherwise, so that informers
// of many processes do not retry in step.
func newJitter(c clock.Clock, name string, seeded bool) *rand.Rand {
	if _, ok := c.(*clock.Fake); ok || seeded {
		h := fnv.New64a()
		h.Write([]byte(name))
		return rand.New(rand.NewPCG(h.Sum64(), 0x6a6974746572))
	}
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

// wait blocks for d on the informer's clock and reports false if ctx ended
// first. On a fake clock the loop is not busy meanwhile (see clock.Sleep).
func (inf *Informer[T]) wait(ctx context.Context, d time.Duration) bool {
	return clock.Sleep(ctx, inf.clock, d) == nil
}

// isExpired reports whether err says the requested resource version is no
// longer available (HTTP 410), so that only a new list can continue.
func isExpired(err error) bool {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusGone
}

type watchEnd uint8

const (
	endCtx     watchEnd = iota // ctx is done
	endClosed                  // the result channel was closed
	endExpired                 // an Error event with a 410
	endError                   // any other Error event
)

// listAndWatch runs until ctx ends. On a fake clock its goroutine is
// tracked work whenever it is not waiting for the next watch event: it
// starts with the informer's first-list work, finishes its work before it
// blocks on a watch, and takes new work (before acknowledging the event
// that ended the watch) when the watch ends.
func (inf *Informer[T]) listAndWatch(ctx context.Context) {
	var (
		rv       string
		relist   = true
		failures int
		work     = func() { inf.finishStart() } // finishes the loop's current work
	)
	defer func() { work() }()
	for {
		if !inf.wait(ctx, backoff(inf.rnd, failures)) {
			return
		}
		if relist {
			items, listRV, err := inf.lw.List(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				inf.report(fmt.Errorf("informer: list: %w", err))
				failures++
				continue
			}
			inf.replace(items)
			rv, relist = listRV, false
			inf.cfg.Logger.V(1).Info("listed", "objects", len(items), "resourceVersion", rv)
		}
		w, err := inf.lw.Watch(ctx, rv)
		if err == nil && isNilValue(w) {
			err = errors.New("the ListWatcher returned neither a watch nor an error")
		}
		if ctx.Err() != nil {
			if err == nil {
				w.Stop()
			}
			return
		}
		if err != nil {
			if isExpired(err) {
				inf.cfg.Logger.V(1).Info("resource version expired; listing again", "resourceVersion", rv)
				relist = true
			} else {
				inf.report(fmt.Errorf("informer: watch from resource version %q: %w", rv, err))
			}
			failures++
			continue
		}
		acks, _ := w.(watchproto.AckWatcher)
		if acks != nil {
			acks.AckEvents()
		}
		if sw, ok := w.(watchproto.SharingWatcher); ok && inf.cfg.Transform == nil {
			sw.ShareObjects()
		}
		work()
		end, healthy, err := inf.consume(ctx, w, acks, &rv)
		work = inf.work.Begin().Done
		w.Stop() // finishes the work of the event that ended the watch
		switch end {
		case endCtx:
			return
		case endClosed:
			inf.cfg.Logger.V(1).Info("watch closed; watching again", "resourceVersion", rv)
		case endExpired:
			inf.cfg.Logger.V(1).Info("resource version expired; listing again", "resourceVersion", rv)
			relist = true
		case endError:
			inf.report(fmt.Errorf("informer: watch error event: %w", err))
			relist = true
		}
		// A healthy watch clears the failure count: its end is routine, and
		// a relist it asks for starts at once. An empty, short-lived watch
		// counts as one more failure.
		switch {
		case !healthy:
			failures++
		case end == endClosed:
			failures = 0
		default:
			failures = 1
		}
	}
}

// consume applies the events of w until it ends, keeping *rv at the
// resource version of the last event. healthy reports whether the watch
// delivered an event or lasted at least healthyWatch.
func (inf *Informer[T]) consume(ctx context.Context, w watch.Interface, acks watchproto.AckWatcher, rv *string) (end watchEnd, healthy bool, err error) {
	start := inf.clock.Now()
	defer func() {
		healthy = healthy || inf.clock.Now().Sub(start) >= healthyWatch
	}()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return endCtx, healthy, nil
		case ev, ok = <-w.ResultChan():
			if !ok {
				return endClosed, healthy, nil
			}
		}
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			obj, ok := ev.Object.(T)
			if !ok || isNil(obj) {
				inf.report(fmt.Errorf("informer: %s event carries %T, want a non-nil %T", ev.Type, ev.Object, obj))
				if acks != nil {
					acks.Ack()
				}
				continue
			}
			healthy = true
			*rv = obj.GetResourceVersion()
			if err := inf.apply(ev.Type, obj); err != nil {
				inf.report(err)
			}
			if acks != nil {
				acks.Ack()
			}
		case watch.Bookmark:
			healthy = true
			if m, ok := ev.Object.(metav1.Object); ok && !isNilValue(m) {
				*rv = m.GetResourceVersion()
			}
			if acks != nil {
				acks.Ack()
			}
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if isExpired(err) {
				return endExpired, healthy, nil
			}
			return endError, healthy, err
		default:
			inf.report(fmt.Errorf("informer: unknown watch event type %q", ev.Type))
			if acks != nil {
				acks.Ack()
			}
		}
	}
}

// transform applies cfg.Transform, checking that it kept the key.
func (inf *Informer[T]) transform(obj T) (T, error) {
	if inf.cfg.Transform == nil {
		return obj, nil
	}
	key := keyOf(obj)
	out, err := inf.cfg.Transform(obj)
	switch {
	case err != nil:
		return out, fmt.Errorf("transform %s: %w", key, err)
	case isNil(out):
		return out, fmt.Errorf("transform %s: returned nil", key)
	case keyOf(out) != key:
		return out, fmt.Errorf("transform %s: changed the key to %s", key, keyOf(out))
	}
	return out, nil
}

// apply stores one watch event and queues its notification. An object
// that cannot be stored is dropped from the cache with a tombstone.
func (inf *Informer[T]) apply(typ watch.EventType, obj T) error {
	key := keyOf(obj)
	obj, terr := inf.transform(obj)
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if typ == watch.Deleted {
		old, ok := inf.cache.Delete(key)
		if !ok {
			return nil // nothing left the cache, so nobody is told
		}
		if terr != nil {
			obj = old
		}
		inf.notifyLocked(note[T]{kind: noteDelete, obj: obj})
		return nil
	}
	if terr != nil {
		inf.dropLocked(key)
		return fmt.Errorf("informer: %s event: %w", typ, terr)
	}
	old, existed, err := inf.cache.store(obj)
	switch {
	case err != nil:
		inf.dropLocked(key)
		return fmt.Errorf("informer: %s event: %w", typ, err)
	case existed:
		inf.notifyLocked(note[T]{kind: noteUpdate, old: old, obj: obj})
	default:
		inf.notifyLocked(note[T]{kind: noteAdd, obj: obj})
	}
	return nil
}

// dropLocked removes key, which the source still has but the cache could
// not store, and tells handlers with a tombstone.
func (inf *Informer[T]) dropLocked(key types.NamespacedName) {
	if old, ok := inf.cache.Delete(key); ok {
		inf.notifyLocked(note[T]{kind: noteTombstone, obj: old})
	}
}

// replace makes items the cache's content and queues the differences:
// adds, updates for objects whose resource version changed, and tombstones
// for objects that are gone. The first call marks the informer synced.
func (inf *Informer[T]) replace(items []T) {
	var errs []error
	objs := items
	if inf.cfg.Transform != nil {
		objs = make([]T, 0, len(items))
		for i, it := range items {
			if isNil(it) {
				errs = append(errs, fmt.Errorf("informer: list item %d: %w", i, errNilObject))
				continue
			}
			out, err := inf.transform(it)
			if err != nil {
				errs = append(errs, fmt.Errorf("informer: list item %d: %w", i, err))
				continue
			}
			objs = append(objs, out)
		}
	}

	inf.mu.Lock()
	record := len(inf.listeners) > 0
	notes := inf.scratch[:0]
	if record && cap(notes) < len(objs) {
		notes = make([]note[T], 0, len(objs))
	}
	c := inf.cache
	c.mu.Lock()
	c.gen++
	for i, obj := range objs {
		e, err := c.prepareLocked(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("informer: list item %d: %w", i, err))
			continue
		}
		old, existed := c.upsertLocked(&e)
		switch {
		case !record:
		case !existed:
			notes = append(notes, note[T]{kind: noteAdd, obj: obj})
		case changed(old, obj):
			notes = append(notes, note[T]{kind: noteUpdate, old: old, obj: obj})
		}
	}
	c.sweepLocked(func(old T) {
		if record {
			notes = append(notes, note[T]{kind: noteTombstone, obj: old})
		}
	})
	c.mu.Unlock()

	first := !inf.HasSynced()
	if first {
		close(inf.synced)
	}
	for _, l := range inf.listeners {
		l.push(notes, first)
	}
	inf.releaseScratchLocked(notes)
	inf.mu.Unlock()

	for _, err := range errs {
		inf.report(err)
	}
}

// changed reports whether a relisted object differs from the cached one,
// judged by resource version (an empty one always counts as changed).
func changed[T Object](old, cur T) bool {
	rv := old.GetResourceVersion()
	return rv == "" || rv != cur.GetResourceVersion()
}
