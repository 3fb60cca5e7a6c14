package clustertest

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// restartable is what StartRestartable started: the current run, and how
// to build the next.
type restartable struct {
	c     *Cluster
	name  string
	build func() (manager.Runnable, error)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// StartRestartable runs what build returns (a Manager with its
// controllers, say) until the test ends, as [Cluster.Start] does; and,
// with [PerturbRestart] in [Options.Perturb], an exploring seed may stop
// it at any step and start a new one from build, as a restart of the
// operator's process would: caches, queues and whatever the reconcilers
// kept in memory start afresh, and what was under way is cut short. build
// runs once at once, and once per restart; it must build everything
// anew (a new Manager from [Cluster.NewManager], new reconcilers). A
// restarted Manager meets the objects that exist in the random order of
// client-go's informer maps: a replay is exact up to the restart (see the
// package doc).
func (c *Cluster) StartRestartable(build func() (manager.Runnable, error)) {
	c.t.Helper()
	r := &restartable{c: c, build: build}
	c.sched.mu.Lock()
	c.sched.restartables = append(c.sched.restartables, r)
	r.name = fmt.Sprintf("restartable %d", len(c.sched.restartables)-1)
	c.sched.mu.Unlock()
	if err := r.start(); err != nil {
		c.t.Fatalf("clustertest: %v", err)
	}
}

// start builds and starts a run.
func (r *restartable) start() error {
	run, err := r.build()
	if err != nil {
		return fmt.Errorf("%s: build: %w", r.name, err)
	}
	ctx, cancel := context.WithCancel(r.c.ctx)
	done := make(chan struct{})
	r.mu.Lock()
	r.cancel, r.done = cancel, done
	r.mu.Unlock()
	r.c.wg.Go(func() {
		defer close(done)
		if err := run.Start(ctx); err != nil && ctx.Err() == nil {
			r.c.fail(fmt.Errorf("clustertest: %s (%T) stopped: %w", r.name, run, err))
		}
	})
	return nil
}

// restart stops the current run and starts a new one, in a goroutine of
// its own (the scheduler calls it, and must go on letting steps through
// while the run stops).
func (r *restartable) restart() {
	r.c.wg.Go(func() {
		r.mu.Lock()
		cancel, done := r.cancel, r.done
		r.mu.Unlock()
		cancel()
		<-done
		if r.c.ctx.Err() != nil {
			return
		}
		if err := r.start(); err != nil {
			r.c.fail(fmt.Errorf("clustertest: restart: %w", err))
		}
	})
}
