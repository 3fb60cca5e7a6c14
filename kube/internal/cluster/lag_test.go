package cluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

func TestReactionLag(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	entries := []Entry{
		{At: at(-5000), Kind: "rs", Type: watch.Added, Name: "old", Spec: 1},
		{At: at(100), Kind: "rs", Type: watch.Added, Name: "new", Spec: 1},
		{At: at(150), Kind: "rs", Type: watch.Modified, Name: "new", Spec: 1}, // a status write
		{At: at(2700), Kind: "rs", Type: watch.Modified, Name: "old", Spec: 0},
	}
	pods := []PodTimes{
		// Ready on time, seen by the controller 0.4 s late.
		{Name: "a", Owner: "new", Seen: at(200), Bound: at(300), ReadyDue: at(2300), ReadySent: at(2500)},
		// Due before the end but its status was sent after: not a cause.
		{Name: "b", Owner: "new", Seen: at(200), Bound: at(300), ReadyDue: at(2800), ReadySent: at(3000)},
		// Sent before the end but not available by then: not a cause.
		{Name: "c", Owner: "new", Seen: at(200), Bound: at(300), ReadyDue: at(2950), ReadySent: at(2800)},
		// An old pod, deleted after the end.
		{Name: "d", Owner: "old", Seen: at(-4000), Bound: at(-3900), ReadyDue: at(-1900), ReadySent: at(-1900),
			Deleting: at(3000), Gone: at(3000)},
	}
	got := ReactionLag(at(0), at(2900), entries, pods, Modeled{Shutdown: 50 * time.Millisecond})
	// end ← a available (0.6 s) ← a bound ← a seen (0.1 s) ← new's spec
	// write (0.1 s) ← the update (0.1 s).
	if want := (Lag{Total: 900 * time.Millisecond, Hops: 4}); got != want {
		t.Errorf("ReactionLag = %+v, want %+v", got, want)
	}
	// With minReadySeconds the same pod is available 1 s later, after the
	// end: the chain goes back to the update.
	got = ReactionLag(at(0), at(2900), entries, pods, Modeled{MinReady: time.Second})
	if want := (Lag{Total: 2900 * time.Millisecond, Hops: 1}); got != want {
		t.Errorf("with minReady: ReactionLag = %+v, want %+v", got, want)
	}
	// With minReadySeconds of 1 s, a (Ready at 2.3 s) shows available at
	// 3 s, the truncated second plus 1 s, 0.3 s before the model's time:
	// the controller's act at 3.1 s is 0.2 s early. b and c, Ready later,
	// show available at 3 s too, but their statuses were sent too late.
	pods[1].ReadySent, pods[2].ReadySent = at(3200), at(3200)
	got = ReactionLag(at(0), at(3100), entries, pods, Modeled{MinReady: time.Second})
	if want := (Lag{Total: 100 * time.Millisecond, Hops: 4}); got != want {
		t.Errorf("minReady, early: ReactionLag = %+v, want %+v", got, want)
	}
	// c sent in time: the tie goes to the later model time (3.95 s).
	pods[2].ReadySent = at(2800)
	got = ReactionLag(at(0), at(3100), entries, pods, Modeled{MinReady: time.Second})
	if want := (Lag{Total: -550 * time.Millisecond, Hops: 4}); got != want {
		t.Errorf("minReady, tie: ReactionLag = %+v, want %+v", got, want)
	}
	// A Recreate-like chain through a deletion: new's write waited for d
	// to stop.
	pods[3].Deleting, pods[3].Gone = at(150), at(160)
	entries2 := []Entry{
		{At: at(100), Kind: "rs", Type: watch.Modified, Name: "old", Spec: 0},
		{At: at(400), Kind: "rs", Type: watch.Added, Name: "new", Spec: 1},
	}
	got = ReactionLag(at(0), at(400), entries2, pods[3:], Modeled{Shutdown: 50 * time.Millisecond})
	// new's write (0.4) ← d stopped (0.15+0.05: 0.2 s) ← old's write (0.05 s) ← update (0.1 s).
	if want := (Lag{Total: 350 * time.Millisecond, Hops: 3}); got != want {
		t.Errorf("deletion: ReactionLag = %+v, want %+v", got, want)
	}
}
