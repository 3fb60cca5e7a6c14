package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// noDelay retries at once and counts retries per key.
type noDelay map[types.NamespacedName]int

func (l noDelay) When(k types.NamespacedName) time.Duration { l[k]++; return 0 }
func (l noDelay) Forget(k types.NamespacedName)             { delete(l, k) }
func (l noDelay) NumRequeues(k types.NamespacedName) int    { return l[k] }

type skips int

func (s *skips) SyncSkipped() { *s++ }

var key = types.NamespacedName{Namespace: "ns", Name: "web"}

// newLoop returns a loop whose Sync fails with errs in turn (then
// succeeds), counting its calls, and the log lines it writes.
func newLoop(maxRetries int, errs ...error) (*Loop, *int, *[]string) {
	calls := new(int)
	lines := new([]string)
	q := workqueue.New(workqueue.Config[types.NamespacedName]{RateLimiter: noDelay{}})
	l := &Loop{Name: "deployment", KeyName: "deployment", Queue: q, Workers: 1, MaxRetries: maxRetries,
		Sync: func(context.Context, types.NamespacedName) (reconcile.Result, error) {
			*calls++
			if *calls <= len(errs) {
				return reconcile.Result{}, errs[*calls-1]
			}
			return reconcile.Result{}, nil
		}}
	return l, calls, lines
}

func logger(lines *[]string) logr.Logger {
	return funcr.New(func(_, args string) { *lines = append(*lines, args) }, funcr.Options{})
}

// drive runs the loop's steps on this goroutine until the queue is empty
// (every retry is immediate), at most n of them.
func drive(t *testing.T, ctx context.Context, l *Loop, log logr.Logger, n int) {
	t.Helper()
	l.Queue.Serve(1)
	for range n {
		if l.Queue.Len() == 0 {
			return
		}
		l.next(ctx, log)
	}
	t.Fatalf("the queue still has %d keys after %d steps", l.Queue.Len(), n)
}

// MaxRetries 0 retries without bound, each retry logged as an error; the
// one Skip/Sync discipline of both controllers.
func TestUnboundedRetries(t *testing.T) {
	errs := make([]error, 20) // more than upstream's Deployment bound of 15
	for i := range errs {
		errs[i] = errors.New("boom")
	}
	l, calls, lines := newLoop(0, errs...)
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 100)
	if *calls != 21 {
		t.Errorf("syncs = %d; want 21 (20 failures, then the success)", *calls)
	}
	if n := len(*lines); n != 20 || !strings.Contains((*lines)[0], `"msg"="Error syncing deployment; will retry"`) || !strings.Contains((*lines)[0], `"error"="boom"`) {
		t.Errorf("%d log lines, first %q; want 20 errors", n, (*lines)[0])
	}
}

func TestMaxRetriesDrops(t *testing.T) {
	l, calls, lines := newLoop(2, errors.New("a"), errors.New("b"), errors.New("c"), errors.New("d"))
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 100)
	if *calls != 3 {
		t.Errorf("syncs = %d; want 3 (the first try and 2 retries)", *calls)
	}
	if last := (*lines)[len(*lines)-1]; !strings.Contains(last, "Dropping deployment out of the queue") {
		t.Errorf("last log line %q; want the drop", last)
	}
}

func TestTerminalNotRetried(t *testing.T) {
	l, calls, lines := newLoop(0, reconcile.Terminal(errors.New("bad spec")))
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 100)
	if *calls != 1 || len(*lines) != 1 || !strings.Contains((*lines)[0], "Not retrying deployment") {
		t.Errorf("syncs = %d, log %q; want 1 sync and one Not retrying line", *calls, *lines)
	}
}

// Once the context has ended, queued keys are drained without a sync.
func TestContextEndDrains(t *testing.T) {
	l, calls, lines := newLoop(0)
	l.Queue.Add(key)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	drive(t, ctx, l, logger(lines), 10)
	if *calls != 0 {
		t.Errorf("syncs after the context ended = %d; want 0", *calls)
	}
}

// A skipped key is counted, not synced, and not retried; the context Skip
// returns is the sync's.
func TestSkip(t *testing.T) {
	l, calls, lines := newLoop(0)
	var s skips
	l.Skipped = &s
	behind := true
	type ctxKey struct{}
	l.Skip = func(ctx context.Context, _ types.NamespacedName) (context.Context, bool, error) {
		return context.WithValue(ctx, ctxKey{}, "syncing"), behind, nil
	}
	sync := l.Sync
	l.Sync = func(ctx context.Context, k types.NamespacedName) (reconcile.Result, error) {
		if ctx.Value(ctxKey{}) != "syncing" {
			t.Error("Sync did not get Skip's context")
		}
		return sync(ctx, k)
	}
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 10)
	if *calls != 0 || s != 1 {
		t.Errorf("behind: %d syncs, %d skips; want 0 and 1", *calls, s)
	}
	behind = false
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 10)
	if *calls != 1 || s != 1 {
		t.Errorf("caught up: %d syncs, %d skips; want 1 and 1", *calls, s)
	}
}

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		workers, retries int
		batch            time.Duration
		want             string
	}{
		{-1, 0, 0, "x.Workers is negative (-1)"},
		{0, -2, 0, "x.MaxRetries is negative (-2)"},
		{0, 0, -time.Second, "x.BatchPeriod is negative (-1s)"},
		{5, 15, time.Second, ""},
	} {
		err := CheckConfig("x", tc.workers, tc.retries, tc.batch)
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || (err != nil && got != tc.want) {
			t.Errorf("CheckConfig(%d, %d, %v) = %v; want %q", tc.workers, tc.retries, tc.batch, err, tc.want)
		}
	}
}

func TestClock(t *testing.T) {
	fc, other := clock.NewFake(time.Unix(0, 0)), clock.NewFake(time.Unix(0, 0))
	if got, err := Clock("x", nil, fc, fc); err != nil || got != fc {
		t.Errorf("Clock(nil, fake informers) = %v, %v; want the informers' clock", got, err)
	}
	if got, err := Clock("x", nil, clock.Real{}); err != nil || got != (clock.Real{}) {
		t.Errorf("Clock(nil, real informers) = %v, %v; want the real clock", got, err)
	}
	if _, err := Clock("x", other, fc); err == nil || !strings.Contains(err.Error(), "x.Clock is *clock.Fake, but an informer runs on another clock") {
		t.Errorf("Clock(another fake, fake informers) = %v; want an error naming x.Clock", err)
	}
	if _, err := Clock("x", clock.Real{}, fc); err == nil {
		t.Error("Clock(real, fake informers): no error")
	}
	if got, err := Clock("x", fc, clock.Real{}); err != nil || got != fc {
		t.Errorf("Clock(fake, real informers) = %v, %v; want the controller's own (the informers take no part in a simulation)", got, err)
	}
}

// TestEnqueueBatchAndAfter checks the two delayed kinds of Enqueue: a
// batched key joins a sync that an event asks for at once (one sync, not
// a second when the period ends), while an After delay is kept however
// often the key syncs meanwhile, as upstream's AddAfter.
func TestEnqueueBatchAndAfter(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	q := workqueue.New(workqueue.Config[types.NamespacedName]{Clock: fc})
	defer q.ShutDown()
	syncOnce := func(why string) {
		t.Helper()
		if n := q.Len(); n != 1 {
			t.Fatalf("%s: %d keys queued; want 1", why, n)
		}
		k, _ := q.Get()
		q.Done(k)
	}
	Enqueue(q, time.Second, []reconcile.Enqueue{{Key: key, Batch: true}})
	if n := q.Len(); n != 0 {
		t.Fatalf("a batched key is queued at once (%d); want it to wait the period", n)
	}
	Enqueue(q, time.Second, []reconcile.Enqueue{{Key: key}})
	syncOnce("an event of the key")
	fc.Step(time.Second)
	if n := q.Len(); n != 0 {
		t.Errorf("the batched key is queued again when its period ends (%d); want it served by the sync", n)
	}

	Enqueue(q, time.Second, []reconcile.Enqueue{{Key: key, After: 2 * time.Second}})
	Enqueue(q, time.Second, []reconcile.Enqueue{{Key: key}})
	syncOnce("an event of the key")
	fc.Step(2 * time.Second)
	syncOnce("the After delay")

	Enqueue(q, 0, []reconcile.Enqueue{{Key: key, Batch: true}})
	syncOnce("a batched key without a period")
}

// With SkipsFail a skipped sync is a failure, as upstream's ReplicaSet
// controller's consistency check makes it: retried with the backoff, and
// counted toward it, until a sync succeeds.
func TestSkipsFail(t *testing.T) {
	l, calls, lines := newLoop(0)
	var s skips
	l.Skipped = &s
	l.SkipsFail = true
	behind := true
	l.Skip = func(ctx context.Context, _ types.NamespacedName) (context.Context, bool, error) {
		return ctx, behind, nil
	}
	l.Queue.Serve(1)
	l.Queue.Add(key)
	v4 := funcr.New(func(_, args string) { *lines = append(*lines, args) }, funcr.Options{Verbosity: 4})
	for range 2 {
		l.next(context.Background(), v4)
	}
	if *calls != 0 || s != 2 || l.Queue.NumRequeues(key) != 2 || l.Queue.Len() != 1 {
		t.Errorf("behind: %d syncs, %d skips, %d requeues, %d queued; want 0, 2, 2 and 1", *calls, s, l.Queue.NumRequeues(key), l.Queue.Len())
	}
	if len(*lines) != 2 || !strings.Contains((*lines)[0], `"level"=4 "msg"="Cache behind this controller's own writes; will retry"`) {
		t.Errorf("log %q; want each skip logged at V(4), not as an error", *lines)
	}
	behind = false
	drive(t, context.Background(), l, logger(lines), 10)
	if *calls != 1 || l.Queue.NumRequeues(key) != 0 {
		t.Errorf("caught up: %d syncs, %d requeues; want 1 and 0", *calls, l.Queue.NumRequeues(key))
	}
}

// With MaxRetries, a key skipped that often is dropped as a failing key
// is: its write's event enqueues it again.
func TestSkipsFailMaxRetries(t *testing.T) {
	l, calls, lines := newLoop(2)
	l.SkipsFail = true
	l.Skip = func(ctx context.Context, _ types.NamespacedName) (context.Context, bool, error) {
		return ctx, true, nil
	}
	l.Queue.Add(key)
	drive(t, context.Background(), l, logger(lines), 10)
	if *calls != 0 || l.Queue.NumRequeues(key) != 0 || l.Queue.Len() != 0 {
		t.Errorf("%d syncs, %d requeues, %d queued; want the key dropped after 2 retries: 0, 0, 0", *calls, l.Queue.NumRequeues(key), l.Queue.Len())
	}
}
