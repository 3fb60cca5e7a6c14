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
// timer is more than maxVirtual past the start, [ErrStalled] when the
// system is quiet (or stuck) and nothing is pending at all, or ctx's error.
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
//
// A busy system is waited for as long as it makes progress (requests and
// deliveries keep happening), however long that takes in wall-clock time:
// a burst of 100,000 pod creations is not cut short. Two cases are stepped
// anyway, so that a run cannot hang: a system that is not idle but made no
// progress for a second (a watch nobody reads), and one that has kept busy
// for [settleCap] (a hot loop). Neither counts as quiet: with no timer
// pending, RunUntil settles again rather than report a stall while work is
// still under way, and reports [ErrStalled] only for a quiet or stuck
// system.
func (c *Cluster) RunUntil(ctx context.Context, cond func() bool, maxVirtual time.Duration) error {
	fc, ok := c.clock.(*clock.Fake)
	if !ok {
		return ErrNotFake
	}
	limit := fc.Now().Add(maxVirtual)
	for {
		busy, err := c.settle(ctx)
		if err != nil {
			return err
		}
		if cond() {
			return nil
		}
		next, ok := fc.NextDeadline()
		if !ok {
			if busy {
				continue
			}
			return ErrStalled
		}
		if next.After(limit) {
			return fmt.Errorf("%w (%v)", ErrTimeLimit, maxVirtual)
		}
		fc.SetTime(next)
	}
}

// Limits of one settle; see RunUntil.
const (
	// stuckAfter is how long a system that is not idle may make no
	// progress before it is stepped anyway.
	stuckAfter = time.Second
	// settleCap bounds one settle of a system that never quiets down.
	settleCap = 30 * time.Second
)

// settle waits until the system is idle and quiet; see RunUntil. busy
// reports that it gave up on a system still making progress (at
// settleCap), so that "nothing pending" does not mean "nothing will
// happen".
func (c *Cluster) settle(ctx context.Context) (busy bool, err error) {
	const checks = 4
	poll := c.cfg.SettleWindow / checks
	start := time.Now()
	progressed := start
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
			return false, ctx.Err()
		case <-t.C:
		}
		now, at := c.activity.Load(), time.Now()
		switch {
		case now != last:
			quiet, last, progressed = 0, now, at
		case c.Idle():
			quiet++
		default:
			quiet = 0
		}
		switch {
		case at.Sub(progressed) >= stuckAfter:
			return false, nil
		case at.Sub(start) >= settleCap:
			return true, nil
		}
	}
	return false, nil
}
