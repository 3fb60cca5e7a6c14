package workqueue_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// whens calls l.When(item) n times and returns the delays.
func whens(l workqueue.RateLimiter[string], item string, n int) []time.Duration {
	var ds []time.Duration
	for range n {
		ds = append(ds, l.When(item))
	}
	return ds
}

const ms = time.Millisecond

func TestExponentialBackoff(t *testing.T) {
	const maxDur = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		l    *workqueue.ExponentialBackoff[string]
		n    int
		want []time.Duration
	}{{
		name: "defaults double from 5ms",
		l:    &workqueue.ExponentialBackoff[string]{},
		n:    5,
		want: []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms},
	}, {
		name: "capped",
		l:    workqueue.NewExponentialBackoff[string](time.Second, 5*time.Second),
		n:    5,
		want: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second},
	}, {
		name: "base above max",
		l:    workqueue.NewExponentialBackoff[string](time.Minute, time.Second),
		n:    2,
		want: []time.Duration{time.Second, time.Second},
	}, {
		name: "no overflow at the top of the range",
		l:    workqueue.NewExponentialBackoff[string](maxDur/2+1, maxDur),
		n:    3,
		want: []time.Duration{maxDur/2 + 1, maxDur, maxDur},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := whens(tc.l, "a", tc.n)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("When() sequence mismatch (-want +got):\n%s", diff)
			}
			if n := tc.l.NumRequeues("a"); n != tc.n {
				t.Errorf("NumRequeues(a) = %d; want %d", n, tc.n)
			}
			if n := tc.l.NumRequeues("b"); n != 0 {
				t.Errorf("NumRequeues(b) = %d; want 0: failures are per item", n)
			}
			tc.l.Forget("a")
			if n := tc.l.NumRequeues("a"); n != 0 {
				t.Errorf("NumRequeues(a) after Forget = %d; want 0", n)
			}
			if got, want := tc.l.When("a"), tc.want[0]; got != want {
				t.Errorf("When(a) after Forget = %v; want %v", got, want)
			}
		})
	}
}

// TestExponentialBackoffManyFailures checks that the delay never
// decreases or overflows, whatever the number of failures.
func TestExponentialBackoffManyFailures(t *testing.T) {
	l := workqueue.NewExponentialBackoff[string](time.Nanosecond, time.Duration(math.MaxInt64))
	prev := time.Duration(0)
	for i := range 200 {
		d := l.When("a")
		if d < prev {
			t.Fatalf("failure %d: When() = %v, less than the previous %v", i, d, prev)
		}
		prev = d
	}
	if prev != time.Duration(math.MaxInt64) {
		t.Errorf("When() after 200 failures = %v; want the cap %v", prev, time.Duration(math.MaxInt64))
	}
}

func TestTokenBucket(t *testing.T) {
	fc := clock.NewFake(t0)
	l := workqueue.NewTokenBucket[string](10, 2, fc)
	got := whens(l, "a", 4)
	want := []time.Duration{0, 0, 100 * ms, 200 * ms}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("When() from a full bucket mismatch (-want +got):\n%s", diff)
	}
	// 300ms refill 3 tokens; 2 were owed, so one is left.
	fc.Step(300 * ms)
	got = whens(l, "b", 2)
	want = []time.Duration{0, 100 * ms}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("When() after 300ms mismatch (-want +got):\n%s", diff)
	}
	// A long idle period refills up to the burst only.
	fc.Step(time.Hour)
	got = whens(l, "c", 3)
	want = []time.Duration{0, 0, 100 * ms}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("When() after an hour mismatch (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues("a"); n != 0 {
		t.Errorf("NumRequeues(a) = %d; want 0", n)
	}
	l.Forget("a") // no effect, no panic
}

func TestTokenBucketDefaults(t *testing.T) {
	fc := clock.NewFake(t0)
	l := workqueue.NewTokenBucket[string](0, 0, fc)
	ds := whens(l, "a", workqueue.DefaultBurst+2)
	for i, d := range ds[:workqueue.DefaultBurst] {
		if d != 0 {
			t.Fatalf("When() #%d = %v; want 0 within the default burst of %d", i, d, workqueue.DefaultBurst)
		}
	}
	if diff := cmp.Diff([]time.Duration{100 * ms, 200 * ms}, ds[workqueue.DefaultBurst:]); diff != "" {
		t.Errorf("When() past the burst at the default 10 qps mismatch (-want +got):\n%s", diff)
	}
	// The zero value works too, on the real clock.
	var zero workqueue.TokenBucket[string]
	if d := zero.When("a"); d != 0 {
		t.Errorf("zero TokenBucket When() = %v; want 0 from a full bucket", d)
	}
}

func TestMaxOf(t *testing.T) {
	fc := clock.NewFake(t0)
	exp := workqueue.NewExponentialBackoff[string](ms, time.Hour)
	l := workqueue.NewMaxOf(exp, nil, workqueue.NewTokenBucket[string](1, 1, fc))
	got := whens(l, "a", 3)
	// exponential 1, 2, 4ms; bucket 0, 1s, 2s.
	want := []time.Duration{ms, time.Second, 2 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("When() mismatch (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues("a"); n != 3 {
		t.Errorf("NumRequeues(a) = %d; want 3", n)
	}
	l.Forget("a")
	if n := exp.NumRequeues("a"); n != 0 {
		t.Errorf("inner NumRequeues(a) after Forget = %d; want 0", n)
	}
	empty := workqueue.NewMaxOf[string]()
	if d, n := empty.When("a"), empty.NumRequeues("a"); d != 0 || n != 0 {
		t.Errorf("empty MaxOf: When() = %v, NumRequeues() = %d; want 0, 0", d, n)
	}
}

func TestFastSlow(t *testing.T) {
	l := workqueue.NewFastSlow[string](ms, time.Second, 2)
	got := whens(l, "a", 4)
	want := []time.Duration{ms, ms, time.Second, time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("When() mismatch (-want +got):\n%s", diff)
	}
	if n := l.NumRequeues("a"); n != 4 {
		t.Errorf("NumRequeues(a) = %d; want 4", n)
	}
	l.Forget("a")
	if d := l.When("a"); d != ms {
		t.Errorf("When(a) after Forget = %v; want %v", d, ms)
	}
}

func TestDefaultControllerRateLimiter(t *testing.T) {
	l := workqueue.DefaultControllerRateLimiter[string]()
	got := whens(l, "a", 3)
	want := []time.Duration{5 * ms, 10 * ms, 20 * ms} // the bucket still has tokens
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("When() mismatch (-want +got):\n%s", diff)
	}
}
