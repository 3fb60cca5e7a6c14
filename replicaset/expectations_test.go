package replicaset_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

func TestExpectationsLifecycle(t *testing.T) {
	k := key("web")
	fc := clock.NewFake(t0)
	var e replicaset.Expectations // the zero value is ready

	if !e.Satisfied(k, fc.Now()) {
		t.Fatal("Satisfied with no record = false; want true")
	}
	e.CreationObserved(k) // no record: no-op
	if _, ok := e.Get(k); ok {
		t.Fatal("CreationObserved created a record")
	}

	e.ExpectCreations(k, 2, fc.Now())
	if e.Satisfied(k, fc.Now()) {
		t.Error("Satisfied with 2 creations pending = true")
	}
	e.CreationObserved(k)
	e.CreationObserved(k)
	if !e.Satisfied(k, fc.Now()) {
		t.Error("Satisfied after both creations = false")
	}
	e.CreationObserved(k)
	if got, _ := e.Get(k); got.Add != -1 {
		t.Errorf("Add after an extra observation = %d; want -1", got.Add)
	}

	e.ExpectDeletions(k, []types.UID{"a", "b", "a"}, fc.Now())
	if got, _ := e.Get(k); got != (replicaset.Expectation{Del: 2, Timestamp: t0}) {
		t.Errorf("Get after ExpectDeletions = %+v; want Del 2 at t0", got)
	}
	e.DeletionObserved(k, "a")
	e.DeletionObserved(k, "a")     // the same pod twice counts once
	e.DeletionObserved(k, "other") // not awaited
	if got, _ := e.Get(k); got.Del != 1 {
		t.Errorf("Del after observing a twice = %d; want 1", got.Del)
	}
	if diff := cmp.Diff([]types.UID{"b"}, e.PendingDeletions(k)); diff != "" {
		t.Errorf("PendingDeletions mismatch (-want +got):\n%s", diff)
	}

	// Lowering does not refresh the timestamp: the record still expires
	// 5 minutes after it was set, strictly after.
	fc.Step(replicaset.ExpectationsTimeout)
	e.Lower(k, 0, 0)
	if e.Satisfied(k, fc.Now()) {
		t.Error("Satisfied at exactly the timeout = true; want false")
	}
	fc.Step(time.Nanosecond)
	if !e.Satisfied(k, fc.Now()) {
		t.Error("Satisfied after the timeout = false; want true (expired)")
	}

	// ExpectCreations keeps the UID record, as upstream.
	e.ExpectCreations(k, 1, fc.Now())
	e.DeletionObserved(k, "b")
	if got, _ := e.Get(k); got.Add != 1 || got.Del != -1 {
		t.Errorf("Get = %+v; want Add 1, Del -1", got)
	}

	e.Raise(k, 2, 0)
	if got, _ := e.Get(k); got.Add != 3 {
		t.Errorf("Add after Raise(2) = %d; want 3", got.Add)
	}
	e.Delete(k)
	if _, ok := e.Get(k); ok || e.PendingDeletions(k) != nil || !e.Satisfied(k, fc.Now()) {
		t.Error("Delete left a record behind")
	}
}

func TestExpectationsRecord(t *testing.T) {
	k := key("web")
	cases := []struct {
		name string
		x    *replicaset.Pending
		want replicaset.Expectation
		ok   bool
	}{
		{name: "nil records nothing"},
		{name: "creations", x: &replicaset.Pending{Creations: 3}, want: replicaset.Expectation{Add: 3, Timestamp: t0}, ok: true},
		{name: "deletions", x: &replicaset.Pending{Deletions: []types.UID{"a"}}, want: replicaset.Expectation{Del: 1, Timestamp: t0}, ok: true},
		{name: "zero creations", x: &replicaset.Pending{}, want: replicaset.Expectation{Timestamp: t0}, ok: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e replicaset.Expectations
			e.Record(k, tc.x, t0)
			got, ok := e.Get(k)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Get = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestExpectationValue(t *testing.T) {
	cases := []struct {
		name      string
		e         replicaset.Expectation
		now       time.Time
		fulfilled bool
		satisfied bool
	}{
		{name: "pending", e: replicaset.Expectation{Add: 1, Timestamp: t0}, now: t0},
		{name: "fulfilled", e: replicaset.Expectation{Timestamp: t0}, now: t0, fulfilled: true, satisfied: true},
		{name: "negative is fulfilled", e: replicaset.Expectation{Add: -1, Del: -1, Timestamp: t0}, now: t0, fulfilled: true, satisfied: true},
		{name: "expired", e: replicaset.Expectation{Del: 4, Timestamp: t0}, now: t0.Add(replicaset.ExpectationsTimeout + 1), satisfied: true},
	}
	for _, tc := range cases {
		if got := tc.e.Fulfilled(); got != tc.fulfilled {
			t.Errorf("%s: Fulfilled() = %v; want %v", tc.name, got, tc.fulfilled)
		}
		if got := tc.e.Satisfied(tc.now); got != tc.satisfied {
			t.Errorf("%s: Satisfied() = %v; want %v", tc.name, got, tc.satisfied)
		}
	}
	if got := (replicaset.Expectation{Add: 2, Del: 2}).Lower(1, 3); got != (replicaset.Expectation{Add: 1, Del: -1}) {
		t.Errorf("Lower(1, 3) = %+v; want Add 1, Del -1", got)
	}
}
