package informer

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Handler receives the changes an [Informer] applies to its cache. Each
// function is called only after the cache holds the change, so a Get from
// inside it sees that state or a later one. Calls to one Handler are
// sequential and in the order the changes were applied; different handlers
// run concurrently, each on its own goroutine. Nil functions are skipped.
//
// Handlers see a subsequence of each object's states (informers are level
// triggered), and the objects they receive are shared and read-only.
type Handler[T Object] struct {
	// OnAdd is called when an object appears in the cache: from a list, a
	// watch event, or the replay of the cache to a handler added late.
	OnAdd func(obj T)
	// OnUpdate is called when a stored object is replaced by a newer one,
	// and on every periodic resync with oldObj == newObj.
	OnUpdate func(oldObj, newObj T)
	// OnDelete is called when an object leaves the cache.
	OnDelete func(d Deleted[T])
	// OnSynced is called once, after the calls for every object of the
	// informer's first list (or, for a handler added later, of the cache's
	// contents when it was added): when [Registration.HasSynced] becomes
	// true. On a fake clock it runs as part of the informer's tracked work
	// (see [clock.Source]), so a consumer that starts serving its work
	// queue from here hands over to its workers without a gap in which
	// virtual time could move on.
	OnSynced func()
}

// Deleted describes an object that left the cache.
type Deleted[T Object] struct {
	// Obj is the last known state of the object: the one the delete event
	// carried, or, for a tombstone, the one the cache last held.
	Obj T
	// Key is Obj's namespace and name.
	Key types.NamespacedName
	// FinalStateUnknown is true for a tombstone: the informer did not see
	// the delete but found the object missing when it listed again (after
	// a broken watch), or dropped an object it could not store. Obj may then
	// be older than the object's real final state.
	FinalStateUnknown bool
}

// Registration is the handle returned by [Informer.AddHandler].
type Registration struct {
	synced  chan struct{} // closed by the handler's goroutine
	quit    chan struct{} // closed by RemoveHandler
	pending atomic.Int64
}

// HasSynced reports whether this handler has returned from the calls for
// every object of the informer's first list (or, for a handler added after
// that, of the cache's contents when it was added). [Informer.HasSynced]
// only says the cache holds the first list; this says the handler saw it.
func (r *Registration) HasSynced() bool {
	select {
	case <-r.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel that is closed when HasSynced becomes true. It
// stays open if the handler is removed, or Run returns, before that.
func (r *Registration) Synced() <-chan struct{} { return r.synced }

// Pending returns the number of notifications queued for this handler and
// not yet delivered. A number that keeps growing means the handler is
// slower than the stream of changes; the queue has no bound.
func (r *Registration) Pending() int { return int(r.pending.Load()) }

type noteKind uint8

const (
	noteAdd noteKind = iota
	noteUpdate
	noteDelete
	noteTombstone
	noteSynced // marker: everything before it was the initial list
)

// note is one queued notification.
type note[T Object] struct {
	old, obj T
	kind     noteKind
}

// listener owns a handler's unbounded queue and the goroutine that drains
// it. Producers never block: push appends under a short lock and wakes the
// goroutine.
//
// On a fake clock each push is a unit of tracked work (see
// [clock.Source]), finished once the handler has returned from its
// notifications; on a deterministic clock the notes of a push are
// delivered only once its turn has come.
type listener[T Object] struct {
	h    Handler[T]
	reg  *Registration
	wake chan struct{} // capacity 1
	src  *clock.Source

	mu    sync.Mutex
	buf   []note[T]   // buf[head:] are queued
	head  int         // notes before it are delivered (cleared)
	avail int         // notes at buf[head:] that may be delivered
	works []*pushWork // tracked pushes not finished, oldest first
	ended bool        // run has returned: pushes are dropped
}

// pushWork is the tracked work of one push of n notes.
type pushWork struct {
	n     int
	w     clock.Work
	ready bool // released: its notes count in avail
	taken bool // its notes are out of buf, being delivered
}

func newListener[T Object](h Handler[T], src *clock.Source) *listener[T] {
	return &listener[T]{
		h:    h,
		reg:  &Registration{synced: make(chan struct{}), quit: make(chan struct{})},
		wake: make(chan struct{}, 1),
		src:  src,
	}
}

// push queues notes, followed by the synced marker if synced is set.
func (l *listener[T]) push(notes []note[T], synced bool) {
	n := len(notes)
	if synced {
		n++
	}
	if n == 0 {
		return
	}
	l.reg.pending.Add(int64(len(notes)))
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.buf = append(l.buf, notes...)
	if synced {
		l.buf = append(l.buf, note[T]{kind: noteSynced})
	}
	if l.src == nil {
		l.avail += n
		l.mu.Unlock()
		l.signal()
		return
	}
	pw := &pushWork{n: n}
	var now bool
	pw.w, now = l.src.Start(func() { l.release(pw) })
	l.works = append(l.works, pw)
	if now {
		pw.ready = true
		l.avail += n
	}
	l.mu.Unlock()
	if now {
		l.signal()
	}
}

// release lets the notes of pw be delivered, when its turn comes on a
// deterministic clock. Turns come in the order of the pushes.
func (l *listener[T]) release(pw *pushWork) {
	l.mu.Lock()
	if !pw.ready && !l.ended {
		pw.ready = true
		l.avail += pw.n
	}
	l.mu.Unlock()
	l.signal()
}

func (l *listener[T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// maxIdleBuf bounds the capacity a listener keeps between bursts, so that a
// large initial list does not pin its queue's memory forever.
const maxIdleBuf = 4096

// run delivers notifications until done or the registration's quit channel
// is closed. Notifications still queued then are dropped, and their work
// is finished.
func (l *listener[T]) run(done <-chan struct{}) {
	var batch []note[T]
	var finished []*pushWork
	defer l.end()
	for {
		select {
		case <-done:
			return
		case <-l.reg.quit:
			return
		case <-l.wake:
		}
		for {
			l.mu.Lock()
			n := l.avail
			if n == 0 {
				l.mu.Unlock()
				break
			}
			switch {
			case l.head == 0 && n == len(l.buf):
				batch, l.buf = l.buf, batch[:0]
			default:
				// On a deterministic clock pushes are released one at a
				// time while later ones wait in buf: moving the head
				// rather than the rest keeps a long queue linear.
				batch = append(batch[:0], l.buf[l.head:l.head+n]...)
				clear(l.buf[l.head : l.head+n])
				l.head += n
				if live := len(l.buf) - l.head; live == 0 {
					l.buf, l.head = l.buf[:0], 0
				} else if l.head >= live {
					copy(l.buf, l.buf[l.head:])
					clear(l.buf[live:])
					l.buf, l.head = l.buf[:live], 0
				}
			}
			l.avail = 0
			finished = finished[:0]
			for _, pw := range l.works {
				if !pw.ready || pw.taken {
					break
				}
				pw.taken = true
				finished = append(finished, pw)
			}
			l.mu.Unlock()
			for i := range batch {
				select {
				case <-done:
					return
				case <-l.reg.quit:
					return
				default:
				}
				l.deliver(batch[i])
				batch[i] = note[T]{}
			}
			l.finish(len(finished))
			if cap(batch) > maxIdleBuf {
				batch = nil
			}
		}
	}
}

// finish ends the work of the k oldest pushes, whose notes have been
// delivered.
func (l *listener[T]) finish(k int) {
	if k == 0 {
		return
	}
	l.mu.Lock()
	done := l.works[:k]
	l.works = l.works[k:]
	l.mu.Unlock()
	for _, pw := range done {
		pw.w.Done()
	}
}

// end drops what is left when run returns, finishing its work.
func (l *listener[T]) end() {
	l.mu.Lock()
	l.ended = true
	works := l.works
	l.works, l.buf, l.head, l.avail = nil, nil, 0, 0
	l.mu.Unlock()
	for _, pw := range works {
		pw.w.Done()
	}
}

func (l *listener[T]) deliver(n note[T]) {
	if n.kind == noteSynced {
		close(l.reg.synced)
		if l.h.OnSynced != nil {
			l.h.OnSynced()
		}
		return
	}
	switch n.kind {
	case noteAdd:
		if l.h.OnAdd != nil {
			l.h.OnAdd(n.obj)
		}
	case noteUpdate:
		if l.h.OnUpdate != nil {
			l.h.OnUpdate(n.old, n.obj)
		}
	case noteDelete, noteTombstone:
		if l.h.OnDelete != nil {
			l.h.OnDelete(Deleted[T]{Obj: n.obj, Key: keyOf(n.obj), FinalStateUnknown: n.kind == noteTombstone})
		}
	}
	l.reg.pending.Add(-1)
}
