package memcluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// event is one write, as recorded in a kind's history. obj and prev are
// stored snapshots and are never modified.
type event[T Object] struct {
	typ  watch.EventType
	obj  T
	prev T // the object before a Modified event; nil-valued otherwise
	rv   uint64
}

// history keeps the last limit events of a kind. compacted is the
// resourceVersion of the newest event dropped: a watch must start at or
// after it.
type history[T Object] struct {
	limit     int
	events    []event[T]
	start     int
	compacted uint64
}

func (h *history[T]) add(e event[T]) {
	h.events = append(h.events, e)
	if len(h.events)-h.start > h.limit {
		h.compacted = h.events[h.start].rv
		var none event[T]
		h.events[h.start] = none
		h.start++
	}
	if h.start > h.limit {
		h.events = slices.Clone(h.events[h.start:])
		h.start = 0
	}
}

func (h *history[T]) since(rv uint64) []event[T] {
	live := h.events[h.start:]
	i, _ := slices.BinarySearchFunc(live, rv, func(e event[T], rv uint64) int { return cmp.Compare(e.rv, rv+1) })
	return live[i:]
}

// recordLocked appends an event to the history and offers it to every
// watcher. prev is the stored object a Modified event replaces.
func (r *Resource[T]) recordLocked(typ watch.EventType, obj, prev T, rv uint64) {
	e := event[T]{typ: typ, obj: obj, prev: prev, rv: rv}
	r.hist.add(e)
	for _, w := range r.watchers {
		w.offerLocked(e)
	}
}

func (r *Resource[T]) watch(ctx context.Context, rvs string, bookmarks bool, match func(T) bool) (watch.Interface, error) {
	var from uint64
	if rvs != "" {
		n, err := strconv.ParseUint(rvs, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rvs))
		}
		from = n
	}
	c := r.c
	w := &watcher[T]{
		r:         r,
		match:     match,
		bookmarks: bookmarks,
		result:    make(chan watch.Event),
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	c.mu.Lock()
	switch {
	case from == 0:
		// "" and "0": start with the current state as Added events.
		keys := make([]T, 0, len(r.objs))
		for _, obj := range r.objs {
			keys = append(keys, obj)
		}
		slices.SortFunc(keys, func(a, b T) int {
			return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
		})
		for _, obj := range keys {
			rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
			w.offerLocked(event[T]{typ: watch.Added, obj: obj, rv: rv})
		}
	case from < r.hist.compacted:
		st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, r.hist.compacted)).ErrStatus
		w.queue = append(w.queue, pending{ev: watch.Event{Type: watch.Error, Object: &st}})
		w.drain = true
	case from > c.rv:
		st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, c.rv), 1).ErrStatus
		w.queue = append(w.queue, pending{ev: watch.Event{Type: watch.Error, Object: &st}})
		w.drain = true
	default:
		for _, e := range r.hist.since(from) {
			w.offerLocked(e)
		}
	}
	if !w.drain {
		r.watchers = append(r.watchers, w)
		if iv := c.cfg.BookmarkInterval; iv > 0 && bookmarks {
			// Armed before Watch returns, so a test can step the clock at once.
			w.bookmarkT = c.clock.NewTimer(iv)
		}
	}
	c.mu.Unlock()
	go w.run(ctx)
	return w, nil
}

func (r *Resource[T]) bookmarkLocked(rv uint64) {
	for _, w := range r.watchers {
		if w.bookmarks {
			w.bookmarkLocked(rv)
		}
	}
}

func (r *Resource[T]) busy(now time.Time) bool {
	r.c.mu.Lock()
	ws := slices.Clone(r.watchers)
	r.c.mu.Unlock()
	for _, w := range ws {
		if w.busy(now) {
			return true
		}
	}
	return false
}

func (r *Resource[T]) unregister(w *watcher[T]) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.watchers = slices.DeleteFunc(r.watchers, func(x *watcher[T]) bool { return x == w })
}

// pending is an event waiting in a watcher's buffer until its delivery time.
type pending struct {
	ev watch.Event // Object is a stored snapshot: copied on delivery
	at time.Time
}

// watcher is one open watch. The cluster offers it events under c.mu
// without blocking; its own goroutine (run) delivers them on an unbuffered
// channel, so an event counts as in flight until a consumer has received it.
type watcher[T Object] struct {
	r         *Resource[T]
	match     func(T) bool
	bookmarks bool
	result    chan watch.Event
	wake      chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	bookmarkT clock.Timer // periodic bookmarks; only run touches it after Watch returns

	mu       sync.Mutex
	queue    []pending
	inFlight bool // an event is out of the queue but not yet received
	woken    bool // an event was queued that run has not looked at yet
	drain    bool // deliver what is queued, then end
	ended    bool // accept nothing more
}

var _ watch.Interface = (*watcher[*metav1.PartialObjectMetadata])(nil)

// ResultChan returns the event channel; it is closed when the watch ends.
func (w *watcher[T]) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch. It is safe to call more than once.
func (w *watcher[T]) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// offerLocked translates e for this watcher's filter and queues it.
func (w *watcher[T]) offerLocked(e event[T]) {
	typ := e.typ
	isNow := w.match(e.obj)
	if typ == watch.Modified {
		var none T
		wasBefore := any(e.prev) != any(none) && w.match(e.prev)
		switch {
		case isNow && !wasBefore:
			typ = watch.Added
		case !isNow && wasBefore:
			typ = watch.Deleted
		case !isNow:
			return
		}
	} else if !isNow {
		return
	}
	lag, drop := w.r.c.faults.watchDelivery()
	w.enqueue(watch.Event{Type: typ, Object: e.obj}, w.r.c.clock.Now().Add(lag), drop)
}

func (w *watcher[T]) bookmarkLocked(rv uint64) {
	obj := w.r.kind.New()
	obj.SetResourceVersion(formatRV(rv))
	w.enqueue(watch.Event{Type: watch.Bookmark, Object: obj}, w.r.c.clock.Now(), false)
}

// enqueue buffers ev. A full buffer, or an injected drop, ends the watch
// at once: the consumer sees its channel close and must watch again from
// the last resourceVersion it received.
func (w *watcher[T]) enqueue(ev watch.Event, at time.Time, drop bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if drop || len(w.queue) >= w.r.c.cfg.WatchBuffer {
		w.ended = true
		w.queue = nil
		w.Stop()
		return
	}
	w.queue = append(w.queue, pending{ev: ev, at: at})
	w.woken = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// busy reports whether the watcher holds an event that is due.
func (w *watcher[T]) busy(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended && !w.drain {
		return false
	}
	return w.inFlight || w.woken || (len(w.queue) > 0 && !w.queue[0].at.After(now))
}

// run delivers events until ctx is done, Stop is called, or the watch
// ends; it then closes the result channel.
func (w *watcher[T]) run(ctx context.Context) {
	defer close(w.result)
	defer w.r.unregister(w)
	defer func() {
		w.mu.Lock()
		w.ended, w.inFlight, w.queue = true, false, nil
		w.mu.Unlock()
	}()
	clk := w.r.c.clock
	iv := w.r.c.cfg.BookmarkInterval
	var bookmarkC <-chan time.Time
	if w.bookmarkT != nil {
		bookmarkC = w.bookmarkT.C()
		defer func() { w.bookmarkT.Stop() }()
	}
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		w.mu.Lock()
		if w.ended && !w.drain {
			w.mu.Unlock()
			return
		}
		// From here until w.mu is released, the watcher either takes an
		// event in flight or arms a timer for the next one, so clearing
		// woken never hides work from Cluster.Idle.
		w.woken = false
		now := clk.Now()
		if len(w.queue) > 0 && !w.queue[0].at.After(now) {
			p := w.queue[0]
			w.queue = w.queue[1:]
			w.inFlight = true
			w.mu.Unlock()
			select {
			case w.result <- materialize(p.ev):
				w.r.c.activity.Add(1)
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
			w.mu.Lock()
			w.inFlight = false
			w.mu.Unlock()
			continue
		}
		if w.drain && len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		var dueC <-chan time.Time
		var due clock.Timer
		if len(w.queue) > 0 {
			due = clk.NewTimer(w.queue[0].at.Sub(now))
			dueC = due.C()
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-dueC:
		case <-bookmarkC:
			w.r.c.mu.Lock()
			w.bookmarkLocked(w.r.c.rv)
			w.r.c.mu.Unlock()
			w.bookmarkT = clk.NewTimer(iv)
			bookmarkC = w.bookmarkT.C()
		case <-w.stop:
		case <-ctx.Done():
		}
		if due != nil {
			due.Stop()
		}
	}
}

// materialize gives the consumer its own copy of a stored object.
func materialize(ev watch.Event) watch.Event {
	if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
		ev.Object = ev.Object.DeepCopyObject()
	}
	return ev
}
