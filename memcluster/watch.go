package memcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/internal/gate"
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
	r.c.lists.Wrote(r.kind.groupResource().String(), rv, r.c.clock.Now())
	if h := r.c.cfg.OnWrite; h != nil {
		h(Write{Type: typ, Resource: r.kind.Resource, Object: obj, ResourceVersion: rv})
	}
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
		work:      clock.NewSource(c.clock, "memcluster: watch "+r.kind.Resource),
		match:     match,
		bookmarks: bookmarks,
		loopback:  admit.IsLoopback(ctx),
		result:    make(chan watch.Event),
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	c.mu.Lock()
	c.watchSeq++
	w.id = c.watchSeq
	switch {
	case from == 0:
		// "" and "0": start with the current state as Added events, in
		// resourceVersion order, so that a client that resumes from the
		// last event it received (a reflector after its watch ended)
		// misses nothing. In another order, the resumed watch would skip
		// the objects of lower versions not delivered yet. (kube-apiserver
		// sends them in key order, but its lists never answer
		// resourceVersion 0, nor do memcluster's, which starts at 1 as
		// etcd: a reflector never watches from "0", only a client that
		// asks for it.)
		objs := make([]event[T], 0, len(r.objs))
		for _, obj := range r.objs {
			rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
			objs = append(objs, event[T]{typ: watch.Added, obj: obj, rv: rv})
		}
		slices.SortFunc(objs, func(a, b event[T]) int { return cmp.Compare(a.rv, b.rv) })
		for _, e := range objs {
			w.offerLocked(e)
		}
	case from < r.hist.compacted:
		st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, r.hist.compacted)).ErrStatus
		w.enqueue(watch.Event{Type: watch.Error, Object: &st}, c.clock.Now(), false)
		w.end(false)
	case from > c.rv:
		st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, c.rv), 1).ErrStatus
		w.enqueue(watch.Event{Type: watch.Error, Object: &st}, c.clock.Now(), false)
		w.end(false)
	default:
		for _, e := range r.hist.since(from) {
			w.offerLocked(e)
		}
	}
	if !w.ending() {
		r.watchers = append(r.watchers, w)
		if iv := c.cfg.BookmarkInterval; iv > 0 && bookmarks {
			// Set before Watch returns, so a test can step the clock at once.
			w.mu.Lock()
			w.armBookmarkLocked(iv)
			w.mu.Unlock()
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

func (r *Resource[T]) unregister(w *watcher[T]) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.watchers = slices.DeleteFunc(r.watchers, func(x *watcher[T]) bool { return x == w })
}

// pending is an entry of a watcher's buffer: an event waiting for its
// delivery time, or the end of the watch (end set, ev empty).
type pending struct {
	ev    watch.Event // Object is a stored snapshot: copied on delivery
	at    time.Time
	end   bool
	work  clock.Work // from when it is due until it is handled; see watcher
	ready bool       // its turn has come: run may deliver it
}

// watcher is one open watch. The cluster offers it events under c.mu
// without blocking; its own goroutine (run) delivers them, in order, on an
// unbuffered channel.
//
// Every event is tracked work of the cluster's clock (see clock.Source)
// from the time it is due (its write, or later with injected watch lag)
// until the consumer has received it, or, for a consumer that called
// AckEvents (the informer), until the consumer's Ack. The end of a watch
// that ends by itself (a dropped watch, a full buffer, an error that ends
// it) is tracked the same way, until the channel is closed or, with
// AckEvents, until Stop.
type watcher[T Object] struct {
	id uint64 // watches are numbered in the order they are opened
	r  *Resource[T]
	// work is the source of this watch's events as tracked work: one per
	// watch, so that a clock that interleaves keeps each watch's events
	// in order but may deliver two watches' in either order.
	work      *clock.Source
	match     func(T) bool
	bookmarks bool
	loopback  bool // the cluster's own (admit.WithLoopback): no faults
	result    chan watch.Event
	wake      chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once

	mu        sync.Mutex
	queue     []*pending
	undue     int         // queue[:undue] are due: dueLocked starts after them
	lagT      clock.Timer // fires when the oldest event not yet due is due
	bookmarkT clock.Timer // periodic bookmarks
	acking    bool        // the consumer calls Ack
	sharing   bool        // the consumer takes stored snapshots, not copies
	unacked   []clock.Work
	early     int  // Acks that came before run had filed the event's work
	ended     bool // accept nothing more
	closed    bool // run has returned; every work is finished
}

var (
	_ watch.Interface = (*watcher[*metav1.PartialObjectMetadata])(nil)
	_ interface {
		AckEvents()
		Ack()
		ShareObjects()
	} = (*watcher[*metav1.PartialObjectMetadata])(nil)
)

// ResultChan returns the event channel; it is closed when the watch ends.
func (w *watcher[T]) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch and finishes the work of everything it has not
// delivered or that is not acknowledged. It is safe to call more than
// once.
func (w *watcher[T]) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// AckEvents makes the work of each event last until [watcher.Ack] rather
// than until it is received; see internal/watchproto.AckWatcher.
func (w *watcher[T]) AckEvents() {
	w.mu.Lock()
	w.acking = true
	w.mu.Unlock()
}

// ShareObjects makes the watch deliver the stored snapshots themselves
// rather than private deep copies; see internal/watchproto.SharingWatcher. The
// consumer must never modify them: they are what the cluster serves.
func (w *watcher[T]) ShareObjects() {
	w.mu.Lock()
	w.sharing = true
	w.mu.Unlock()
}

// Ack finishes the work of the oldest event received and not yet
// acknowledged.
func (w *watcher[T]) Ack() {
	w.mu.Lock()
	if len(w.unacked) == 0 {
		// The consumer was quicker than run, which files the work of an
		// event only once the send has completed.
		w.early++
		w.mu.Unlock()
		return
	}
	done := w.unacked[0]
	w.unacked = w.unacked[1:]
	w.mu.Unlock()
	done.Done()
}

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
	var lag time.Duration
	var drop bool
	if !w.loopback {
		lag, drop = w.r.c.faults.watchDelivery()
	}
	if drop {
		w.r.c.requested(context.Background(), Request{Verb: string(gate.VerbWatch), Resource: w.r.kind.groupResource().Resource, Dropped: true, Watch: w.id})
		w.end(true)
		return
	}
	w.enqueue(watch.Event{Type: typ, Object: e.obj}, w.r.c.clock.Now().Add(lag), true)
}

func (w *watcher[T]) bookmarkLocked(rv uint64) {
	obj := w.r.kind.New()
	obj.SetResourceVersion(formatRV(rv))
	w.enqueue(watch.Event{Type: watch.Bookmark, Object: obj}, w.r.c.clock.Now(), false)
}

// armBookmarkLocked sets the timer of the next periodic bookmark. w.mu is
// held.
func (w *watcher[T]) armBookmarkLocked(iv time.Duration) {
	w.bookmarkT = w.r.c.clock.AfterFunc(iv, func() {
		c := w.r.c
		c.mu.Lock()
		w.bookmarkLocked(c.rv)
		c.mu.Unlock()
		w.mu.Lock()
		if !w.ended {
			w.armBookmarkLocked(iv)
		}
		w.mu.Unlock()
	})
}

// enqueue buffers ev for delivery at at. A full buffer ends the watch at
// once (if bounded is set: the buffer of the initial events is not), as
// kube-apiserver ends a watch whose consumer is too slow: the consumer sees
// its channel close and must watch again from the last resourceVersion it
// received.
func (w *watcher[T]) enqueue(ev watch.Event, at time.Time, bounded bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if bounded && len(w.queue) >= w.r.c.cfg.WatchBuffer {
		w.endLocked(true)
		return
	}
	p := &pending{ev: ev, at: at}
	w.queue = append(w.queue, p)
	w.dueLocked(w.r.c.clock.Now())
}

// end ends the watch: the consumer sees the channel close after what is
// buffered, or at once if drop is set.
func (w *watcher[T]) end(drop bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLocked(drop)
}

func (w *watcher[T]) endLocked(drop bool) {
	if w.ended {
		return
	}
	w.ended = true
	if drop {
		for _, p := range w.queue {
			p.work.Done() // a zero Work when not due yet
		}
		w.queue, w.undue = w.queue[:0], 0
	}
	w.queue = append(w.queue, &pending{end: true, at: w.r.c.clock.Now()})
	w.stopTimersLocked()
	w.dueLocked(w.r.c.clock.Now())
}

// ending reports whether the watch ended while it was being set up (an
// error it answers with at once).
func (w *watcher[T]) ending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// dueLocked starts the work of every buffered entry whose time has come, in
// order, and sets the lag timer for the first whose time has not.
func (w *watcher[T]) dueLocked(now time.Time) {
	src := w.work
	signal := false
	// Entries fall due in order, so those before undue are due already:
	// not looking at them again keeps a long queue linear.
	for ; w.undue < len(w.queue); w.undue++ {
		p := w.queue[w.undue]
		if p.at.After(now) {
			if w.lagT == nil {
				w.lagT = w.r.c.clock.AfterFunc(p.at.Sub(now), w.lagDue)
			}
			break
		}
		var ready bool
		p.work, ready = src.Start(func() { w.release(p) })
		if ready {
			p.ready, signal = true, true
		}
	}
	if signal {
		w.signal()
	}
}

// lagDue runs when the oldest lagging event is due.
func (w *watcher[T]) lagDue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lagT = nil
	if !w.closed {
		w.dueLocked(w.r.c.clock.Now())
	}
}

// release lets run deliver p, when its turn comes on a deterministic
// clock.
func (w *watcher[T]) release(p *pending) {
	w.mu.Lock()
	p.ready = true
	w.mu.Unlock()
	w.signal()
}

func (w *watcher[T]) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher[T]) stopTimersLocked() {
	if w.lagT != nil {
		w.lagT.Stop()
		w.lagT = nil
	}
	if w.bookmarkT != nil {
		w.bookmarkT.Stop()
		w.bookmarkT = nil
	}
}

// run delivers events until ctx is done, Stop is called, or the end of
// the watch is delivered; it then closes the result channel and finishes
// the work of everything left.
func (w *watcher[T]) run(ctx context.Context) {
	defer w.finish(ctx) // last: after the close, which ends a watch's work
	defer close(w.result)
	defer w.r.unregister(w)
	gctx := ctx // what the cluster's Gate waits with: ends with the watch
	if w.r.c.cfg.Gate != nil {
		var cancel context.CancelFunc
		gctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-w.stop:
				cancel()
			case <-gctx.Done():
			}
		}()
	}
	for {
		w.mu.Lock()
		var p *pending
		sharing := w.sharing
		if len(w.queue) > 0 && w.queue[0].ready {
			p = w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.undue-- // it was ready, so due
			if p.end {
				// Its work ends with the close (or, with AckEvents, at Stop).
				w.unacked = append(w.unacked, p.work)
			}
		}
		w.mu.Unlock()
		if p == nil {
			select {
			case <-w.wake:
				continue
			case <-w.stop:
			case <-ctx.Done():
			}
			return
		}
		if p.end {
			return
		}
		if err := w.r.c.enter(gctx, w.step(p.ev)); err != nil {
			// The refused delivery ends the watch. Its work lasts as the
			// end's does, until the close (with AckEvents, until Stop):
			// the consumer takes on its next work (watching again)
			// before a simulation can find nothing left to do.
			w.mu.Lock()
			w.unacked = append(w.unacked, p.work)
			w.mu.Unlock()
			if errors.Is(err, gate.ErrWatchExpired) {
				w.sendExpired(ctx, w.step(p.ev).ResourceVersion)
			}
			return
		}
		ev := p.ev
		if !sharing {
			ev = materialize(ev)
		}
		select {
		case w.result <- ev:
		case <-w.stop:
			p.work.Done()
			return
		case <-ctx.Done():
			p.work.Done()
			return
		}
		w.mu.Lock()
		switch {
		case !w.acking:
		case w.early > 0:
			w.early-- // acknowledged already
		default:
			w.unacked = append(w.unacked, p.work)
			p = nil
		}
		w.mu.Unlock()
		if p != nil {
			p.work.Done()
		}
	}
}

// finish ends the watch for good, after its channel is closed: it stops the
// timers and finishes the work of the entries not delivered and of the
// events not acknowledged. With AckEvents, it waits for Stop (or the end
// of ctx) first: until then the consumer may still acknowledge.
func (w *watcher[T]) finish(ctx context.Context) {
	w.mu.Lock()
	acking := w.acking
	w.mu.Unlock()
	if acking {
		select {
		case <-w.stop:
		case <-ctx.Done():
		}
	}
	w.mu.Lock()
	w.ended, w.closed = true, true
	w.stopTimersLocked()
	left := w.unacked
	for _, p := range w.queue {
		left = append(left, p.work)
	}
	w.queue, w.unacked, w.undue = nil, nil, 0
	w.mu.Unlock()
	for _, wk := range left {
		wk.Done()
	}
}

// materialize gives the consumer its own copy of a stored object.
func materialize(ev watch.Event) watch.Event {
	if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
		ev.Object = ev.Object.DeepCopyObject()
	}
	return ev
}

// step describes the delivery of ev for the cluster's Gate.
func (w *watcher[T]) step(ev watch.Event) gate.Step {
	s := gate.Step{Kind: gate.StepDelivery, Resource: w.r.kind.Resource, Watch: w.id, Event: ev.Type}
	if m, ok := ev.Object.(metav1.Object); ok && !isNil(m) {
		s.ResourceVersion, s.Namespace, s.Name = m.GetResourceVersion(), m.GetNamespace(), m.GetName()
	}
	return s
}
