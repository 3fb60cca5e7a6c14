// Package testhooks holds switches that turn off some of ctrlkit's own
// stale-cache safety fixes, for tests that show an exploration of
// interleavings finds the races they fix (controllerruntime/clustertest's
// Explore). Off by default; nothing but tests sets them. Each is read at
// one decision point.
package testhooks

import "sync/atomic"

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
)
