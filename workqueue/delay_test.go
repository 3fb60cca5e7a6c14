package workqueue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The delay loop runs on its own goroutine, so after a Step the tests
// learn that it has moved the due items by waiting, in Get, for a marker
// item due at the same moment: due items are moved together, earliest
// first, so anything else that had become due is queued by then.

// step is one step of a scripted delay test.
type step struct {
	verb  string // "add", "after", "batch", "get", "done", "step", "len"
	item  string
	delay time.Duration
}

// delayCase is a scripted delay test: the steps, and what the "get" and
// "len" steps should see.
type delayCase struct {
	name   string
	steps  []step
	want   []string
	reason string
}

// runDelayCases runs each case on a new queue with a fake clock.
func runDelayCases(t *testing.T, tests []delayCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, fc := newFakeQueue(t)
			var got []string
			for _, s := range tc.steps {
				switch s.verb {
				case "add":
					q.Add(s.item)
				case "after":
					q.AddAfter(s.item, s.delay)
				case "batch":
					q.AddBatched(s.item, s.delay)
				case "get":
					got = append(got, "get "+get(t, q))
				case "done":
					q.Done(s.item)
				case "step":
					fc.Step(s.delay)
				case "len":
					got = append(got, fmt.Sprintf("len %d", q.Len()))
				default:
					t.Fatalf("unknown verb %q", s.verb)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmismatch (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAddAfter(t *testing.T) {
	runDelayCases(t, []delayCase{{
		name: "due in order, ties in request order",
		steps: []step{
			{verb: "after", item: "c", delay: 3 * time.Second},
			{verb: "after", item: "a", delay: time.Second},
			{verb: "after", item: "b", delay: 2 * time.Second},
			{verb: "after", item: "d", delay: 2 * time.Second},
			{verb: "step", delay: 3 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "get"}, {verb: "get"},
		},
		want: []string{"get a", "get b", "get d", "get c"},
	}, {
		name: "not before due",
		steps: []step{
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "marker", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "len"},
			{verb: "step", delay: time.Second},
			{verb: "get"},
		},
		want: []string{"get marker", "len 0", "get a"},
	}, {
		name: "earliest due time wins",
		steps: []step{
			{verb: "after", item: "a", delay: 10 * time.Second},
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "a", delay: 20 * time.Second},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "done", item: "a"}, {verb: "get"}, {verb: "done", item: "marker"},
			{verb: "after", item: "marker", delay: 15 * time.Second},
			{verb: "step", delay: 15 * time.Second},
			{verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get marker", "get marker", "len 0"},
		reason: "the 10s and 20s requests merged into the 5s one: a runs once",
	}, {
		name: "add does not cancel a delay",
		steps: []step{
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "add", item: "a"}, {verb: "len"},
			{verb: "get"}, {verb: "done", item: "a"},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"len 1", "get a", "get a", "get marker", "len 0"},
		reason: "a plain Add leaves the delay alone: a runs at once and again at 5s, as with client-go",
	}, {
		name: "after of a queued item waits out its delay",
		steps: []step{
			{verb: "add", item: "a"},
			{verb: "after", item: "a", delay: 5 * time.Second},
			// m1 is moved to the queue only after a's request has been
			// taken in, while a is still queued.
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get m1", "get a", "get m2", "len 0"},
		reason: "the request made while a was queued still brings a back at 5s (client-go's waiting queue does not look at its queue)",
	}, {
		name: "after of an item due again at Done waits out its delay",
		steps: []step{
			{verb: "add", item: "a"}, {verb: "get"}, {verb: "add", item: "a"},
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "m1", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "done", item: "a"}, {verb: "get"}, {verb: "done", item: "a"}, {verb: "done", item: "m1"},
			{verb: "after", item: "m2", delay: 4 * time.Second},
			{verb: "step", delay: 4 * time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get m1", "get a", "get a", "get m2", "len 0"},
		reason: "the re-add at Done does not serve the delayed request: a runs at Done and again at 5s",
	}, {
		name: "a failed retry does not postpone the first",
		steps: []step{
			// A retry due at 1s, then the item runs on an event and asks
			// for a later one: it still comes back at 1s.
			{verb: "after", item: "a", delay: time.Second},
			{verb: "add", item: "a"}, {verb: "get"},
			{verb: "after", item: "a", delay: 8 * time.Second},
			{verb: "done", item: "a"},
			{verb: "after", item: "marker", delay: time.Second},
			{verb: "step", delay: time.Second},
			{verb: "get"}, {verb: "get"}, {verb: "len"},
		},
		want:   []string{"get a", "get a", "get marker", "len 0"},
		reason: "the earliest pending request wins even across a run of the item",
	}, {
		name: "due while processing: queued at Done",
		steps: []step{
			{verb: "add", item: "a"}, {verb: "get"},
			{verb: "after", item: "a", delay: 5 * time.Second},
			{verb: "after", item: "marker", delay: 5 * time.Second},
			{verb: "step", delay: 5 * time.Second},
			{verb: "get"}, {verb: "len"},
			{verb: "done", item: "a"}, {verb: "len"}, {verb: "get"},
		},
		want:   []string{"get a", "get marker", "len 0", "len 1", "get a"},
		reason: "a worker's RequeueAfter is kept, and never runs the item twice at once",
	}, {
		name: "zero and negative delays add now",
		steps: []step{
			{verb: "after", item: "a"}, {verb: "after", item: "b", delay: -time.Second}, {verb: "len"},
		},
		want: []string{"len 2"},
	}, {
		name: "huge delay does not overflow",
		steps: []step{
			{verb: "after", item: "a", delay: time.Duration(1<<63 - 1)},
			{verb: "after", item: "marker", delay: time.Hour},
			{verb: "step", delay: time.Hour},
			{verb: "get"}, {verb: "len"},
		},
		want: []string{"get marker", "len 0"},
	}})
}

func TestShutDownDiscardsDelayedItems(t *testing.T) {
	q, fc := newFakeQueue(t)
	q.AddAfter("a", time.Second)
	q.AddAfter("b", 2*time.Second)
	if got := fc.Waiters(); got != 1 {
		t.Fatalf("fake clock waiters = %d; want 1 timer for the delay loop", got)
	}
	q.Add("c")
	q.ShutDown()
	if got := fc.Waiters(); got != 0 {
		t.Errorf("fake clock waiters after ShutDown = %d; want 0 (the delay loop stopped its timer)", got)
	}
	fc.Step(time.Hour)
	if item, shutdown := q.Get(); item != "c" || shutdown {
		t.Fatalf("Get() = %q, %v; want the queued item \"c\"", item, shutdown)
	}
	q.Done("c")
	if item, shutdown := q.Get(); !shutdown {
		t.Errorf("Get() = %q; want shutdown: delayed items are discarded", item)
	}
}

// TestDelayTimerFollowsEarliest checks that the one timer always targets
// the earliest due item, and that a plain Add does not take an item out
// of the delay heap.
func TestDelayTimerFollowsEarliest(t *testing.T) {
	q, fc := newFakeQueue(t)
	next := func() time.Duration {
		t.Helper()
		d, ok := fc.NextDeadline()
		if !ok {
			return 0
		}
		return d.Sub(fc.Now())
	}
	q.AddAfter("a", 10*time.Second)
	if got := next(); got != 10*time.Second {
		t.Fatalf("timer in %v after AddAfter(a, 10s); want 10s", got)
	}
	q.AddAfter("b", 3*time.Second)
	if got := next(); got != 3*time.Second {
		t.Fatalf("timer in %v after AddAfter(b, 3s); want 3s", got)
	}
	q.AddAfter("c", 7*time.Second)
	if got := next(); got != 3*time.Second {
		t.Fatalf("timer in %v after AddAfter(c, 7s); want still 3s", got)
	}
	fc.Step(3 * time.Second)
	if item, _ := q.Get(); item != "b" {
		t.Fatalf("Get() = %q; want b", item)
	}
	// The timer's callback, which ran before Step returned, set the timer
	// again for c.
	if got := next(); got != 4*time.Second {
		t.Fatalf("timer in %v after b was due; want 4s (for c)", got)
	}
	// A plain Add leaves the delays alone (client-go's waiting queue): the
	// timer still targets c, which comes again when due.
	q.Add("c")
	if got := next(); got != 4*time.Second {
		t.Fatalf("timer in %v after Add(c); want still 4s (c's delay)", got)
	}
	if item, _ := q.Get(); item != "c" {
		t.Fatalf("Get() = %q; want c, added", item)
	}
	q.Done("c")
	fc.Step(4 * time.Second)
	if item, _ := q.Get(); item != "c" {
		t.Fatalf("Get() = %q; want c again, due", item)
	}
	q.Done("c")
	if got := next(); got != 3*time.Second {
		t.Errorf("timer in %v after c was due; want 3s (for a)", got)
	}
}
