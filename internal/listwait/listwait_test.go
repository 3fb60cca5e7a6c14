package listwait

import (
	"testing"
	"time"
)

func TestFresh(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	const catchUp = 95 * time.Millisecond
	var tr Tracker
	if got := tr.Fresh("statefulsets.apps", catchUp); !got.IsZero() {
		t.Fatalf("nothing written: fresh at %v; want at once", got)
	}
	tr.Wrote("statefulsets.apps", 5, t0)
	if got := tr.Fresh("statefulsets.apps", catchUp); !got.IsZero() {
		t.Errorf("after a write of its own kind: fresh at %v; want at once", got)
	}
	tr.Wrote("leaderworkersets.leaderworkerset.x-k8s.io", 6, t0.Add(time.Millisecond))
	if got, want := tr.Fresh("statefulsets.apps", catchUp), t0.Add(time.Millisecond+catchUp); !got.Equal(want) {
		t.Errorf("after a write of another kind: fresh at %v; want %v", got, want)
	}
	if got := tr.Fresh("leaderworkersets.leaderworkerset.x-k8s.io", catchUp); !got.IsZero() {
		t.Errorf("the written kind: fresh at %v; want at once", got)
	}
	tr.Wrote("events", 7, t0.Add(3*time.Millisecond))
	if got, want := tr.Fresh("statefulsets.apps", catchUp), t0.Add(3*time.Millisecond+catchUp); !got.Equal(want) {
		t.Errorf("after two writes of other kinds: fresh at %v; want %v (the latest)", got, want)
	}
	tr.Wrote("statefulsets.apps", 8, t0.Add(4*time.Millisecond))
	if got := tr.Fresh("statefulsets.apps", catchUp); !got.IsZero() {
		t.Errorf("after a write of its own kind again: fresh at %v; want at once", got)
	}
}
