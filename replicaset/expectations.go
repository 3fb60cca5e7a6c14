package replicaset

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Expectation is what a ReplicaSet still waits to observe: Add creations
// and Del deletions, recorded at Timestamp. Counts may go negative when more
// is observed than expected (upstream controller.ControlleeExpectations).
type Expectation struct {
	Add       int64
	Del       int64
	Timestamp time.Time
}

// Fulfilled reports whether nothing is outstanding: Add ≤ 0 and Del ≤ 0.
func (e Expectation) Fulfilled() bool { return e.Add <= 0 && e.Del <= 0 }

// Expired reports whether more than [ExpectationsTimeout] has passed since
// the expectation was recorded (strictly more).
func (e Expectation) Expired(now time.Time) bool {
	return now.Sub(e.Timestamp) > ExpectationsTimeout
}

// Satisfied reports whether a sync may act: the expectation is fulfilled
// or expired.
func (e Expectation) Satisfied(now time.Time) bool { return e.Fulfilled() || e.Expired(now) }

// Lower returns e with add fewer creations and del fewer deletions
// outstanding; the timestamp is kept (upstream LowerExpectations).
func (e Expectation) Lower(add, del int64) Expectation {
	e.Add -= add
	e.Del -= del
	return e
}

// Expectations records, per ReplicaSet key, the pod creations and
// deletions a sync asked for and has not yet seen through the informer, so
// that the next sync does not act on a stale cache. Deletions are tracked by
// pod UID, so a pod seen deleted twice (deletion timestamp, then removal) is
// counted once. It is safe for concurrent use; its zero value is ready.
//
// A nil *Expectations holds nothing and keeps nothing: it reads as empty
// (every key is satisfied, nothing is recorded or pending) and ignores
// writes. A controller given one acts on every sync as if it had no
// expectations; it does not panic.
//
// It is the counterpart of upstream's UIDTrackingControllerExpectations,
// with pod UIDs instead of "namespace/name" keys and time passed in rather
// than read from a real clock.
type Expectations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*expEntry
}

type expEntry struct {
	counted bool // exp was set (upstream: the entry exists in the counts store)
	exp     Expectation
	uids    map[types.UID]struct{} // nil: no UID record
}

// entry returns the entry for key, creating it if create is set. The caller
// holds mu; s is not nil.
func (s *Expectations) entry(key types.NamespacedName, create bool) *expEntry {
	if e := s.m[key]; e != nil || !create {
		return e
	}
	if s.m == nil {
		s.m = make(map[types.NamespacedName]*expEntry)
	}
	e := &expEntry{}
	s.m[key] = e
	return e
}

// Record records what a [Plan] asks for: x.Creations via ExpectCreations or
// x.Deletions via ExpectDeletions. A nil x records nothing.
func (s *Expectations) Record(key types.NamespacedName, x *Pending, now time.Time) {
	switch {
	case x == nil:
	case x.Deletions != nil:
		s.ExpectDeletions(key, x.Deletions, now)
	default:
		s.ExpectCreations(key, x.Creations, now)
	}
}

// Set replaces the counts for key with add and del, stamped now. Any UID
// record is kept (upstream SetExpectations).
func (s *Expectations) Set(key types.NamespacedName, add, del int, now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, true)
	e.counted = true
	e.exp = Expectation{Add: int64(add), Del: int64(del), Timestamp: now}
}

// ExpectCreations is Set(key, n, 0, now).
func (s *Expectations) ExpectCreations(key types.NamespacedName, n int, now time.Time) {
	s.Set(key, n, 0, now)
}

// ExpectDeletions replaces the UID record for key with uids (duplicates
// count once) and the counts with (0, number of distinct uids), stamped now.
func (s *Expectations) ExpectDeletions(key types.NamespacedName, uids []types.UID, now time.Time) {
	if s == nil {
		return
	}
	set := make(map[types.UID]struct{}, len(uids))
	for _, u := range uids {
		set[u] = struct{}{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, true)
	e.uids = set
	e.counted = true
	e.exp = Expectation{Del: int64(len(set)), Timestamp: now}
}

// CreationObserved lowers the outstanding creations of key by one. It does
// nothing when key has no expectation.
func (s *Expectations) CreationObserved(key types.NamespacedName) {
	s.Lower(key, 1, 0)
}

// DeletionObserved lowers the outstanding deletions of key by one if uid is
// one of the pods it waits for, and forgets uid, so that a second
// observation of the same pod does not count again.
func (s *Expectations) DeletionObserved(key types.NamespacedName, uid types.UID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, false)
	if e == nil {
		return
	}
	if _, ok := e.uids[uid]; !ok {
		return
	}
	delete(e.uids, uid)
	if e.counted {
		e.exp = e.exp.Lower(0, 1)
	}
}

// Lower lowers the outstanding counts of key without touching its
// timestamp; it does nothing when key has no expectation.
func (s *Expectations) Lower(key types.NamespacedName, add, del int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entry(key, false); e != nil && e.counted {
		e.exp = e.exp.Lower(int64(add), int64(del))
	}
}

// renew stamps key's expectation with now, its counts unchanged, so that
// it is honoured for another [ExpectationsTimeout]; it does nothing when
// key has no expectation.
func (s *Expectations) renew(key types.NamespacedName, now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entry(key, false); e != nil && e.counted {
		e.exp.Timestamp = now
	}
}

// Raise raises the outstanding counts of key without touching its
// timestamp; it does nothing when key has no expectation.
func (s *Expectations) Raise(key types.NamespacedName, add, del int) {
	s.Lower(key, -add, -del)
}

// Satisfied reports whether the ReplicaSet key may sync at now: it has no
// expectation, or its expectation is fulfilled or expired (upstream
// SatisfiedExpectations).
func (s *Expectations) Satisfied(key types.NamespacedName, now time.Time) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, false)
	return e == nil || !e.counted || e.exp.Satisfied(now)
}

// Get returns the expectation of key and whether one is recorded.
func (s *Expectations) Get(key types.NamespacedName) (Expectation, bool) {
	if s == nil {
		return Expectation{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entry(key, false); e != nil && e.counted {
		return e.exp, true
	}
	return Expectation{}, false
}

// PendingDeletions returns the UIDs of the pods key still waits to see
// deleted, sorted; nil when there is no UID record (upstream GetUIDs).
func (s *Expectations) PendingDeletions(key types.NamespacedName) []types.UID {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key, false)
	if e == nil || e.uids == nil {
		return nil
	}
	out := make([]types.UID, 0, len(e.uids))
	for u := range e.uids {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Delete forgets everything recorded for key (upstream DeleteExpectations).
func (s *Expectations) Delete(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
