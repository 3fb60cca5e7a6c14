package kube

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// PriorityLimiter is one token bucket with two doors. Like client-go's
// default limiter it holds up to burst tokens and gains qps a second, and
// every request takes one; unlike it, a request through [PriorityLimiter.Low]
// gets a token only when no request through [PriorityLimiter.High] is
// waiting for one, or once it has let LowShare-1 of them pass. Both doors
// are [flowcontrol.RateLimiter]s, for rest.Config.RateLimiter.
//
// The operator uses it, when asked (Operator.LowPriorityEvents), to let a
// controller's writes go before its events within the one budget they
// share: throttled, kube-controller-manager spends a sixth of each
// controller's requests on events (its event sink is one more waiter
// beside five workers), and client-go's broadcaster drops the events that
// do not fit in its queue either way.
//
// Low is never starved: while it waits, at least one token in
// [LowShare] goes to it, so a controller that never goes quiet still
// sends an event a second at 20 QPS. Within a door requests are served in
// arrival order. Stop does nothing, as for client-go's token bucket: the
// doors share the bucket.
type PriorityLimiter struct {
	qps   float64
	burst float64
	clock clock.WithDelayedExecution

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	waiting [2]list.List // of *tokenWaiter; [0] high, [1] low
	timer   clock.Timer  // armed while someone waits
	// passed counts the tokens High has taken while Low waited, since
	// Low's last.
	passed int
}

// LowShare is the least share of a [PriorityLimiter]'s tokens that goes to
// Low while it waits: one in LowShare.
const LowShare = 20

type tokenWaiter struct {
	granted chan struct{}
	done    bool // granted or gone; guarded by the limiter's mu
}

// NewPriorityLimiter returns a limiter of qps tokens a second that saves
// up to burst, starting full, on the real clock. It reports an error for
// a qps that is not positive or a burst below 1.
func NewPriorityLimiter(qps float32, burst int) (*PriorityLimiter, error) {
	return newPriorityLimiter(qps, burst, clock.RealClock{})
}

func newPriorityLimiter(qps float32, burst int, clk clock.WithDelayedExecution) (*PriorityLimiter, error) {
	if !(qps > 0) || burst < 1 {
		return nil, fmt.Errorf("kube: a priority limiter needs qps > 0 and burst >= 1, not %v and %d", qps, burst)
	}
	return &PriorityLimiter{qps: float64(qps), burst: float64(burst), clock: clk, tokens: float64(burst), last: clk.Now()}, nil
}

// High returns the door that goes first.
func (l *PriorityLimiter) High() flowcontrol.RateLimiter { return door{l, 0} }

// Low returns the door that waits while High has waiters.
func (l *PriorityLimiter) Low() flowcontrol.RateLimiter { return door{l, 1} }

// refill adds the tokens earned since the last call. Called with mu held.
func (l *PriorityLimiter) refill() {
	now := l.clock.Now()
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.burst, l.tokens+d.Seconds()*l.qps)
	}
	l.last = now
}

// next returns the door whose turn it is (0 High, 1 Low) among those
// with a request: High's, unless Low has waited through LowShare-1 of
// High's tokens. Called with mu held.
func (l *PriorityLimiter) next(highWaits, lowWaits bool) int {
	if lowWaits && (!highWaits || l.passed >= LowShare-1) {
		return 1
	}
	return 0
}

// take takes a token for door p. Called with mu held.
func (l *PriorityLimiter) take(p int) {
	l.tokens--
	switch {
	case p == 1:
		l.passed = 0
	case l.waiting[1].Len() > 0:
		l.passed++
	}
}

// dispatch hands the tokens there are to the waiters, High's first, and
// arms the timer for the next token if some are left waiting. Called with
// mu held.
func (l *PriorityLimiter) dispatch() {
	l.refill()
	for l.tokens >= 1 && l.waiting[0].Len()+l.waiting[1].Len() > 0 {
		q := l.next(l.waiting[0].Len() > 0, l.waiting[1].Len() > 0)
		w := l.waiting[q].Remove(l.waiting[q].Front()).(*tokenWaiter)
		w.done = true
		close(w.granted)
		l.take(q)
	}
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.waiting[0].Len()+l.waiting[1].Len() > 0 {
		// Rounded up to the nanosecond; if rounding in refill still leaves
		// the token a hair short, the next dispatch waits a nanosecond more.
		wait := max(time.Duration(math.Ceil((1-l.tokens)/l.qps*float64(time.Second))), 1)
		l.timer = l.clock.AfterFunc(wait, l.fire)
	}
}

func (l *PriorityLimiter) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dispatch()
}

func (l *PriorityLimiter) tryAccept(p int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	// A request goes at once only if no one of its door waits and its
	// door's turn comes before the other's.
	if l.tokens < 1 || l.waiting[p].Len() > 0 || l.next(p == 0 || l.waiting[0].Len() > 0, p == 1 || l.waiting[1].Len() > 0) != p {
		return false
	}
	l.take(p)
	return true
}

func (l *PriorityLimiter) wait(ctx context.Context, p int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.tryAccept(p) {
		return nil
	}
	w := &tokenWaiter{granted: make(chan struct{})}
	l.mu.Lock()
	e := l.waiting[p].PushBack(w)
	l.dispatch()
	l.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.done {
			// Granted as the context ended: keep the token rather than
			// lose it.
			return nil
		}
		w.done = true
		l.waiting[p].Remove(e)
		if l.waiting[1].Len() == 0 {
			l.passed = 0
		}
		// Those behind may be served now (a Low waiter, once the last
		// High one leaves).
		l.dispatch()
		return ctx.Err()
	}
}

// door is one priority's view of a PriorityLimiter.
type door struct {
	l *PriorityLimiter
	p int
}

func (d door) TryAccept() bool                { return d.l.tryAccept(d.p) }
func (d door) Accept()                        { _ = d.l.wait(context.Background(), d.p) }
func (d door) Wait(ctx context.Context) error { return d.l.wait(ctx, d.p) }
func (d door) Stop()                          {}
func (d door) QPS() float32                   { return float32(d.l.qps) }
