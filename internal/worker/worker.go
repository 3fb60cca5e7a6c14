// Package worker is the one worker loop of ctrlkit's controllers: the
// Deployment and ReplicaSet controllers of packages deployment and
// replicaset, and the client-go shell of package kube, take keys from a
// work queue and sync them through it, with one retry discipline, one set
// of log lines and one way of counting skipped syncs. It is plumbing, not
// API: nested modules of this repository may import it, users cannot.
package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Skipper is the optional part of a controller's measurements hook
// (ControllerConfig.Metrics of packages deployment and replicaset): a hook
// with a SyncSkipped method is told of every key a worker took from the
// queue and did not sync because the cache still held a version that the
// controller's own last write had replaced. The write's event enqueues the
// key again, so the skip saves a sync on stale data, not work. It must be
// quick and safe for concurrent use.
type Skipper interface {
	SyncSkipped()
}

// Loop is one controller's workers.
type Loop struct {
	// Name names the controller in the log lines ("deployment").
	Name string
	// KeyName is the log key of the object synced ("deployment",
	// "replicaSet").
	KeyName string
	Queue   *workqueue.Queue[types.NamespacedName]
	// Workers is the number of keys synced in parallel; at least 1.
	Workers int
	// MaxRetries bounds the rate-limited retries of a failing key, after
	// which it is dropped until its next event; 0 means no bound.
	MaxRetries int
	// Skip, if set, is asked before each sync whether the cache still lags
	// behind the controller's own writes for key (the write's event will
	// enqueue the key again); it may return the context the sync runs
	// with. An error is retried as a sync's error is.
	Skip func(ctx context.Context, key types.NamespacedName) (context.Context, bool, error)
	// Sync syncs one key.
	Sync func(ctx context.Context, key types.NamespacedName) (reconcile.Result, error)
	// Skipped, if set, counts the skips.
	Skipped Skipper
	// SkipsFail makes a skipped sync count as a failed one, as upstream's
	// ReplicaSet controller counts the sync its consistency check refuses
	// (StaleControllerConsistencyReplicaSet): the key is retried with the
	// rate limiter's backoff (up to MaxRetries), and the failure counts
	// toward it. It is logged at V(4), not as an error. Unset, a skip
	// counts as a success: the limiter forgets the key's failures.
	SkipsFail bool
}

// Run waits until synced is closed (nil: it is), then runs the workers
// until ctx ends; it then shuts the queue down and waits for the syncs in
// progress. Keys still queued once ctx has ended are drained without a
// sync. The logger comes from ctx (logr.FromContextOrDiscard).
func (l *Loop) Run(ctx context.Context, synced <-chan struct{}) {
	log := logr.FromContextOrDiscard(ctx)
	defer l.Queue.ShutDown()
	if synced != nil {
		select {
		case <-synced:
		case <-ctx.Done():
			return
		}
	}
	log.Info("Starting controller", "controller", l.Name, "workers", l.Workers)
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Go(func() {
			for l.next(ctx, log) {
			}
		})
	}
	<-ctx.Done()
	log.Info("Shutting down controller", "controller", l.Name)
	l.Queue.ShutDown()
	wg.Wait()
}

// next syncs one key; false means the queue is shut down.
func (l *Loop) next(ctx context.Context, log logr.Logger) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	defer l.Queue.Done(key)
	if ctx.Err() != nil {
		return true // shutting down: drain without syncing
	}
	sctx := ctx
	var res reconcile.Result
	var err error
	if l.Skip != nil {
		var skip bool
		sctx, skip, err = l.Skip(ctx, key)
		if skip && err == nil {
			if l.Skipped != nil {
				l.Skipped.SyncSkipped()
			}
			switch {
			case !l.SkipsFail:
				l.Queue.Forget(key)
			case l.MaxRetries == 0 || l.Queue.NumRequeues(key) < l.MaxRetries:
				// A failure for the backoff, but no error: the write's
				// event comes.
				log.V(4).Info("Cache behind this controller's own writes; will retry", l.KeyName, key)
				l.Queue.AddRateLimited(key)
			default:
				l.Queue.Forget(key) // the write's event enqueues it
			}
			return true
		}
		if sctx == nil {
			sctx = ctx
		}
	}
	if err == nil {
		res, err = l.Sync(sctx, key)
	}
	switch {
	case err == nil:
		l.Queue.Forget(key)
		if res.RequeueAfter > 0 {
			l.Queue.AddAfter(key, res.RequeueAfter)
		}
	case reconcile.IsTerminal(err):
		log.Error(err, "Not retrying "+l.Name, l.KeyName, key)
		l.Queue.Forget(key)
	case l.MaxRetries == 0 || l.Queue.NumRequeues(key) < l.MaxRetries:
		log.Error(err, "Error syncing "+l.Name+"; will retry", l.KeyName, key)
		l.Queue.AddRateLimited(key)
	default:
		log.Error(err, "Dropping "+l.Name+" out of the queue", l.KeyName, key)
		l.Queue.Forget(key)
	}
	return true
}

// Enqueue adds what event rules asked for to q. Keys marked Batch wait
// batch (if positive), as batched adds (workqueue.Queue.AddBatched): the
// first batched event of a burst sets the time of the one sync for all of
// it, and an event that syncs the key at once takes them along. Keys with
// an After delay are added as upstream's AddAfter adds them.
func Enqueue(q *workqueue.Queue[types.NamespacedName], batch time.Duration, es []reconcile.Enqueue) {
	for _, e := range es {
		switch {
		case e.After > 0:
			q.AddAfter(e.Key, e.After)
		case e.Batch && batch > 0:
			q.AddBatched(e.Key, batch)
		default:
			q.Add(e.Key)
		}
	}
}

// WhenSynced returns an OnSynced callback for n informer handlers and a
// channel closed once all n have synced; just before, it announces the
// workers to q (see workqueue.Queue.Serve).
func WhenSynced(n int, q *workqueue.Queue[types.NamespacedName], workers int) (func(), <-chan struct{}) {
	done := make(chan struct{})
	var left atomic.Int32
	left.Store(int32(n))
	return func() {
		if left.Add(-1) == 0 {
			q.Serve(workers)
			close(done)
		}
	}, done
}

// Once guards a controller's Run: the first call runs, later ones get
// err.
type Once struct{ once sync.Once }

// Do runs f on the first call and returns its error; later calls return
// again.
func (o *Once) Do(f func() error, again error) error {
	err := again
	o.once.Do(func() { err = f() })
	return err
}

// CheckConfig checks the fields every controller configuration shares;
// what names the configuration in the error ("deployment:
// ControllerConfig").
func CheckConfig(what string, workers, maxRetries int, batch time.Duration) error {
	switch {
	case workers < 0:
		return fmt.Errorf("%s.Workers is negative (%d)", what, workers)
	case maxRetries < 0:
		return fmt.Errorf("%s.MaxRetries is negative (%d)", what, maxRetries)
	case batch < 0:
		return fmt.Errorf("%s.BatchPeriod is negative (%v)", what, batch)
	}
	return nil
}

// Clock returns the clock a controller configured with cfg runs on: cfg
// itself, or, when nil, the clock of its informers (a simulation's
// virtual clock). A controller on another clock than an informer on a
// *clock.Fake would take no part in the simulation, and the first sync
// would never come: that is an error naming both (what names the
// configuration, "deployment: ControllerConfig").
func Clock(what string, cfg clock.Clock, informers ...clock.Clock) (clock.Clock, error) {
	for _, c := range informers {
		if cfg == nil {
			cfg = c
		}
		if _, fake := c.(*clock.Fake); fake && c != cfg {
			return nil, fmt.Errorf("%s.Clock is %T, but an informer runs on another clock (%T): give the controller its informers' clock, or leave Clock nil", what, cfg, c)
		}
	}
	return clock.OrReal(cfg), nil
}
