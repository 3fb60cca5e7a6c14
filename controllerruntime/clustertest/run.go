package clustertest

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeLimit is returned by RunUntil when its condition does not hold
// within the virtual time limit.
var ErrTimeLimit = errors.New("clustertest: virtual time limit reached")

// ErrStopped is returned by RunUntil when something started with
// [Cluster.Start] (a Manager) has stopped with an error: the condition is
// then not waited for any longer.
var ErrStopped = errors.New("clustertest: stopped with an error")

// Settle lets everything that can happen at the current virtual instant
// happen: it returns once every request has been answered, every watch
// event delivered and handled, and every goroutine of the bubble is
// blocked. Time does not move.
func (c *Cluster) Settle() { c.sched.settle() }

// Advance lets d of virtual time pass, with everything due meanwhile
// happening at its time (requeues, kubelet transitions, progress
// deadlines), then settles.
func (c *Cluster) Advance(d time.Duration) {
	time.Sleep(d)
	c.Settle()
}

// RunUntil lets virtual time pass until cond holds, for at most limit. It
// checks cond once everything has settled, then again whenever the
// cluster has stored a write or delivered a watch event and everything has
// settled again (cond must therefore depend on the cluster's state or on
// what your code does when the cluster changes; it may read from the
// cluster, but must not write to it), and returns nil once it holds. It
// takes no wall-clock time beyond the work itself: a condition an hour
// away is reached in milliseconds.
//
// Otherwise it returns an error wrapping ErrTimeLimit, or ErrStopped as
// soon as a Manager started with [Cluster.Start] has stopped with an
// error, that says what is stuck, one line each: the Manager's error;
// kinds its controllers wait on ("kind source *v1alpha1.Widget not served
// by the bench: …"); reconcile workers blocked elsewhere than in the
// cluster, and where; custom resources whose status says they are not
// ready, by their conditions ("webapp default/shop: Ready=False reason
// Progressing message …"), an unobserved generation or no status at all;
// Deployments not rolled out; pods not ready and why ("container app
// ImagePullBackOff"); REST paths the bench does not serve; and when the
// cluster last changed.
func (c *Cluster) RunUntil(cond func() bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	failed := len(c.failures())
	for {
		c.Settle()
		// Taken at a quiescent instant, so that which changes wake the
		// loop, and how often cond runs (and makes its requests), does not
		// depend on how goroutines happened to run.
		changed := c.sched.changes()
		if cond() {
			return nil
		}
		if len(c.failures()) > failed {
			return fmt.Errorf("%w (at +%v)%s", ErrStopped, c.Now(), c.describe())
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w (%v, at +%v)%s", ErrTimeLimit, limit, c.Now(), c.describe())
		}
		select {
		case <-changed:
		case <-timer.C:
		}
	}
}

// MustRunUntil is RunUntil, failing the test with what was awaited when
// the limit is reached.
func (c *Cluster) MustRunUntil(what string, cond func() bool, limit time.Duration) {
	c.t.Helper()
	if err := c.RunUntil(cond, limit); err != nil {
		c.t.Fatalf("waiting until %s: %v", what, err)
	}
}
