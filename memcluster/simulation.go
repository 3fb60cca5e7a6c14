package memcluster

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Errors returned by [Cluster.RunUntil].
var (
	// ErrNotFake means the cluster does not run on a *clock.Fake.
	ErrNotFake = errors.New("memcluster: RunUntil needs a cluster on a *clock.Fake")
	// ErrStalled means the condition does not hold, the system is quiet and
	// no timer is pending: nothing will ever happen again.
	ErrStalled = errors.New("memcluster: stalled: condition not met and no timer pending")
	// ErrTimeLimit means the next timer lies beyond the virtual time limit.
	ErrTimeLimit = errors.New("memcluster: virtual time limit reached")
)

// AddIdleCheck registers a probe for [Cluster.Idle]: idle must report
// whether the component it watches (a work queue, say) has nothing to do.
// Registering the queues of the controllers under test closes the gap the
// cluster cannot see: between an informer receiving an event and the
// controller's next request.
func (c *Cluster) AddIdleCheck(idle func() bool) {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	c.idleChecks = append(c.idleChecks, idle)
}

// Idle reports whether the cluster knows of no pending work at the current
// time: no watch holds an event that is due and undelivered (an event
// counts until a consumer has received it), no running kubelet has a
// wake-up or transition due, and every check added with
// [Cluster.AddIdleCheck] reports idle. Work scheduled for later on the
// clock (lagging watch events, kubelet transitions, timers of queues) does
// not count: stepping the clock releases it.
func (c *Cluster) Idle() bool {
	now := c.clock.Now()
	c.mu.Lock()
	kinds, kubelets := slices.Clone(c.order), slices.Clone(c.kubelets)
	c.mu.Unlock()
	for _, k := range kinds {
		if k.busy(now) {
			return false
		}
	}
	for _, k := range kubelets {
		if k.busy(now) {
			return false
		}
	}
	c.idleMu.Lock()
	checks := slices.Clone(c.idleChecks)
	c.idleMu.Unlock()
	for _, idle := range checks {
		if !idle() {
			return false
		}
	}
	return true
}

// RunUntil runs a simulation on the cluster's fake clock until cond holds.
// It repeats two steps: let the system settle in wall-clock time, then, if
// cond is still false, move the clock to the earliest pending timer
// ([clock.Fake.NextDeadline]), which wakes whatever waits for it. It
// returns nil once cond holds after settling, [ErrTimeLimit] when the next
// timer is more than maxVirtual past the start, [ErrStalled] when nothing
// is pending at all, or ctx's error.
//
// Settling is the hard part, and it is a heuristic. The system is settled
// when [Cluster.Idle] holds and no request, watch delivery or kubelet pass
// happened for [Config.SettleWindow] of wall-clock time (checked four
// times, yielding the processor in between). What the cluster cannot see
// is a goroutine computing between receiving an event and making its next
// request: if that takes longer than the window, the clock moves on early.
// The consequence is bounded: virtual time only moves to the next timer,
// so the late work still happens, at a later virtual time than an ideal
// run. Register your queues with [Cluster.AddIdleCheck] to close the gap.
// A system that never quiets down (a hot loop, a watch nobody reads) is
// stepped anyway after a second of wall-clock time per step.
func (c *Cluster) RunUntil(ctx context.Context, cond func() bool, maxVirtual time.Duration) error {
	fc, ok := c.clock.(*clock.Fake)
	if !ok {
		return ErrNotFake
	}
	limit := fc.Now().Add(maxVirtual)
	for {
		if err := c.settle(ctx); err != nil {
			return err
		}
		if cond() {
			return nil
		}
		next, ok := fc.NextDeadline()
		if !ok {
			return ErrStalled
		}
		if next.After(limit) {
			return fmt.Errorf("%w (%v)", ErrTimeLimit, maxVirtual)
		}
		fc.SetTime(next)
	}
}

// settle waits until the system is idle and quiet; see RunUntil.
func (c *Cluster) settle(ctx context.Context) error {
	const checks = 4
	poll := c.cfg.SettleWindow / checks
	giveUp := time.Now().Add(time.Second)
	last := c.activity.Load()
	quiet := 0
	for quiet < checks {
		for range 16 {
			runtime.Gosched()
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		now := c.activity.Load()
		if now == last && c.Idle() {
			quiet++
		} else {
			quiet, last = 0, now
		}
		if time.Now().After(giveUp) {
			return nil
		}
	}
	return nil
}
