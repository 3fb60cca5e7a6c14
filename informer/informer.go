package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Config configures an [Informer]. The zero value is ready to use.
type Config[T Object] struct {
	// Cache configures the informer's cache (indexes, resource name).
	Cache CacheConfig[T]

	// Clock times resyncs and retry backoff. Nil means the clock of the
	// ListWatcher if it has a method Clock() clock.Clock (memcluster's
	// do: an informer of a simulation runs on its virtual clock), else
	// [clock.Real].
	Clock clock.Clock

	// SeededJitter seeds the jitter of the retry backoff from the
	// informer's type whatever the clock, as it is on a [clock.Fake]: for
	// a simulation on another deterministic clock (the real clock inside a
	// testing/synctest bubble), so that it replays.
	SeededJitter bool

	// ResyncPeriod, when positive, replays the whole cache to every handler
	// as updates (oldObj == newObj) at that interval. Resync never reads the
	// source again. Zero means never; negative is invalid.
	ResyncPeriod time.Duration

	// Transform, if set, is applied to every object from the source before
	// it is stored, typically to drop fields nobody reads (managedFields)
	// and save memory. It may modify its argument in place, which the
	// informer owns, and must not change the namespace or name. An error
	// rejects the object: it is treated as absent, so a previous version is
	// removed from the cache with a tombstone, and the error is reported.
	Transform func(T) (T, error)

	// Logger receives the errors Run recovers from and routine events such
	// as relists. The zero Logger discards.
	Logger logr.Logger

	// OnError, if set, is called (from Run's goroutine) with each error Run
	// recovers from: failed lists and watches, rejected objects, malformed
	// events. It must not block for long.
	OnError func(error)
}

// Informer keeps a [Cache] in step with a [ListWatcher] and tells handlers
// about the changes. Create it with [New], add handlers, then call Run.
type Informer[T Object] struct {
	lw    ListWatcher[T]
	cfg   Config[T]
	clock clock.Clock
	cache *Cache[T]

	synced chan struct{} // closed once the first list is in the cache

	// On a fake clock the informer's work is tracked (see clock.Source):
	// from New until its first list has been handed to the handlers, and
	// whenever its loop runs rather than waits for the next event.
	work      *clock.Source
	start     clock.Work    // the first list; done once it is handed over
	startOnce sync.Once     // finishes start
	gate      chan struct{} // closed when start's turn comes
	rnd       *rand.Rand    // backoff jitter; only Run's goroutine uses it

	// mu serialises every cache write with the queuing of its
	// notifications, so each handler sees the changes in cache order, and
	// guards the fields below. Handlers never run under it.
	mu        sync.Mutex
	state     runState
	done      <-chan struct{} // Run's ctx.Done(), for handler goroutines
	listeners []*listener[T]
	scratch   []note[T]
	resyncT   clock.Timer
	wg        sync.WaitGroup
}

type runState uint8

const (
	idle runState = iota
	running
	stopped
)

// New returns an informer that fills a new cache from lw. It starts
// nothing: call [Informer.Run].
//
// On a [clock.Fake] the informer is tracked work from now until its first
// list has reached its handlers, so a simulation ([clock.Fake.RunUntil])
// waits for Run rather than moving time on without it: run every informer
// you create on such a clock.
func New[T Object](lw ListWatcher[T], cfg Config[T]) *Informer[T] {
	if cfg.Clock == nil {
		if src, ok := lw.(interface{ Clock() clock.Clock }); ok {
			cfg.Clock = src.Clock() // a simulation's source: its virtual clock
		}
	}
	inf := &Informer[T]{
		lw:     lw,
		cfg:    cfg,
		clock:  clock.OrReal(cfg.Clock),
		cache:  NewCache(cfg.Cache),
		synced: make(chan struct{}),
		gate:   make(chan struct{}),
	}
	var zero T
	name := fmt.Sprintf("informer %T", zero)
	inf.work = clock.NewSource(inf.clock, name)
	inf.work.Expect() // a simulation waits for Run; it names an informer never run
	inf.rnd = newJitter(inf.clock, name, cfg.SeededJitter)
	var now bool
	inf.start, now = inf.work.Start(func() { close(inf.gate) })
	if now {
		close(inf.gate)
	}
	return inf
}

// Clock returns the clock the informer runs on (Config.Clock).
func (inf *Informer[T]) Clock() clock.Clock { return inf.clock }

// Cache returns the informer's cache. Readers may use it at any time; it
// is complete once HasSynced is true. Only the informer writes to it:
// writing to it yourself would put it out of step with what handlers were
// told.
func (inf *Informer[T]) Cache() *Cache[T] { return inf.cache }

// HasSynced reports whether the first list is in the cache. It does not
// mean handlers have processed it: see [Registration.HasSynced].
func (inf *Informer[T]) HasSynced() bool {
	select {
	case <-inf.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel that is closed when HasSynced becomes true.
func (inf *Informer[T]) Synced() <-chan struct{} { return inf.synced }

// AddHandler registers h. A handler added after the first list first
// receives the cache's current contents as OnAdd calls. Handlers can be
// added before or during Run, but not after Run has returned.
func (inf *Informer[T]) AddHandler(h Handler[T]) (*Registration, error) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.state == stopped {
		return nil, errors.New("informer: add handler: informer has stopped")
	}
	// A source of its own per handler: a clock that interleaves keeps
	// each handler's notifications in order, but may deliver a change to
	// one handler before another.
	var zero T
	l := newListener(h, clock.NewSource(inf.clock, fmt.Sprintf("informer %T handler", zero)))
	if inf.HasSynced() {
		objs := inf.cache.AppendList(nil, "", nil)
		notes := make([]note[T], len(objs))
		for i, obj := range objs {
			notes[i] = note[T]{kind: noteAdd, obj: obj}
		}
		l.push(notes, true)
	}
	inf.listeners = append(inf.listeners, l)
	if inf.state == running {
		inf.startLocked(l)
	}
	return l.reg, nil
}

// RemoveHandler stops deliveries to the handler of reg. A call in progress
// finishes; queued notifications are dropped.
func (inf *Informer[T]) RemoveHandler(reg *Registration) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for i, l := range inf.listeners {
		if l.reg == reg {
			inf.listeners = append(inf.listeners[:i], inf.listeners[i+1:]...)
			close(reg.quit)
			return nil
		}
	}
	return errors.New("informer: remove handler: not registered")
}

// Run lists, fills the cache, then watches, until ctx is done; it then
// stops the handlers' goroutines, waits for any call in progress to return,
// and returns nil. Queued notifications are dropped.
//
// Failures of the source are retried, with jittered exponential backoff
// (the first retry is immediate): a failed list is tried again; a watch
// that ends is resumed from the last resource version seen; a watch that
// reports that version expired (410) leads to a new list, whose differences
// with the cache are delivered as adds, updates (only for objects whose
// resource version changed) and tombstone deletes. Run returns an error only
// for an invalid configuration or when called more than once.
func (inf *Informer[T]) Run(ctx context.Context) error {
	inf.work.Running()
	if err := inf.validate(); err != nil {
		inf.finishStart()
		return err
	}
	inf.mu.Lock()
	if inf.state != idle {
		inf.mu.Unlock()
		return errors.New("informer: Run called more than once")
	}
	inf.state = running
	inf.done = ctx.Done()
	for _, l := range inf.listeners {
		inf.startLocked(l)
	}
	if inf.cfg.ResyncPeriod > 0 {
		inf.armResyncLocked()
	}
	inf.mu.Unlock()

	select {
	case <-inf.gate: // at once, except on a deterministic clock
		inf.listAndWatch(ctx)
	case <-ctx.Done():
	}
	inf.finishStart()

	inf.mu.Lock()
	inf.state = stopped
	if inf.resyncT != nil {
		inf.resyncT.Stop()
	}
	inf.mu.Unlock()
	inf.wg.Wait()
	return nil
}

// finishStart ends the tracked work of the first list, once.
func (inf *Informer[T]) finishStart() { inf.startOnce.Do(inf.start.Done) }

func (inf *Informer[T]) validate() error {
	switch {
	case inf.lw == nil:
		return errors.New("informer: nil ListWatcher")
	case inf.cfg.ResyncPeriod < 0:
		return fmt.Errorf("informer: negative ResyncPeriod %v", inf.cfg.ResyncPeriod)
	case inf.cache.err != nil:
		return inf.cache.err
	}
	return nil
}

func (inf *Informer[T]) startLocked(l *listener[T]) {
	done := inf.done
	inf.wg.Go(func() { l.run(done) })
}

// notifyLocked queues notes for every handler. inf.mu must be held.
func (inf *Informer[T]) notifyLocked(notes ...note[T]) {
	for _, l := range inf.listeners {
		l.push(notes, false)
	}
}

// armResyncLocked sets the timer of the next resync. inf.mu is held.
func (inf *Informer[T]) armResyncLocked() {
	inf.resyncT = inf.clock.AfterFunc(inf.cfg.ResyncPeriod, inf.resync)
}

// resync queues an update with oldObj == newObj for every cached object,
// and sets the timer of the next one.
func (inf *Informer[T]) resync() {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.state != running {
		return
	}
	inf.armResyncLocked()
	if !inf.HasSynced() || len(inf.listeners) == 0 {
		return
	}
	objs := inf.cache.AppendList(nil, "", nil)
	notes := inf.scratch[:0]
	for _, obj := range objs {
		notes = append(notes, note[T]{kind: noteUpdate, old: obj, obj: obj})
	}
	inf.notifyLocked(notes...)
	inf.releaseScratchLocked(notes)
}

func (inf *Informer[T]) releaseScratchLocked(notes []note[T]) {
	clear(notes)
	if cap(notes) > maxIdleBuf {
		notes = nil
	}
	inf.scratch = notes[:0]
}

func (inf *Informer[T]) report(err error) {
	inf.cfg.Logger.Error(err, "informer recovered from an error")
	if inf.cfg.OnError != nil {
		inf.cfg.OnError(err)
	}
}
