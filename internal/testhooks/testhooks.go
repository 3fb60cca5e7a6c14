// Package testhooks holds switches for this repository's tests: some turn
// off ctrlkit's own stale-cache safety fixes, for tests that show an
// exploration of interleavings finds the races they fix
// (controllerruntime/clustertest's Explore); CheckManagedFields turns on a
// cross-check of memcluster. Off by default; nothing but tests sets them.
// Each is read at one decision point.
package testhooks

import (
	"sync"
	"sync/atomic"
)

var (
	// TrustOldStatus makes a Recreate rollout trust an old ReplicaSet's
	// status before it has observed its scale-down (rollout.Recreate
	// without OldStatusPending): the new ReplicaSet may then be created
	// while old pods still run.
	TrustOldStatus atomic.Bool
	// TrustNewStatus makes a rolling update count the new ReplicaSet's
	// available pods before its status has observed its generation
	// (deployment's unobservedAvailability): old ReplicaSets may then be
	// scaled down below the availability bound.
	TrustNewStatus atomic.Bool
	// ForgetOwnCreates makes the next sync of a Deployment run without
	// waiting for the cache to hold the ReplicaSets its last sync created
	// (internal/writes.Tracker.Behind), as upstream does: with a new
	// template by then, it may create a second new ReplicaSet.
	ForgetOwnCreates atomic.Bool
	// LowerFailedDeletes makes the ReplicaSet controller stop expecting a
	// pod deletion that failed ambiguously (it may have happened) at once,
	// as upstream does, instead of settling it with a live read first: it
	// may then delete another pod while the first deletion's event is on
	// its way.
	LowerFailedDeletes atomic.Bool
	// CheckManagedFields makes memcluster compute the managedFields of
	// every update it records the cheap way (from the entries it keeps
	// parsed) with apimachinery's field manager too. A difference is
	// reported to ManagedFieldsMismatch, and the field manager's entries
	// are stored.
	CheckManagedFields atomic.Bool
)

var mismatches struct {
	sync.Mutex
	found []string
}

// ManagedFieldsMismatch records a difference CheckManagedFields found.
func ManagedFieldsMismatch(description string) {
	mismatches.Lock()
	defer mismatches.Unlock()
	mismatches.found = append(mismatches.found, description)
}

// ManagedFieldsMismatches returns the differences recorded since its last
// call, and forgets them.
func ManagedFieldsMismatches() []string {
	mismatches.Lock()
	defer mismatches.Unlock()
	found := mismatches.found
	mismatches.found = nil
	return found
}
