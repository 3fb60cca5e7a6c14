// Package shard runs controllers as N active members that share a
// cluster's namespaces: the 64-bit FNV-1a hash space of namespace names
// (the hash kube-apiserver v1.37 shards lists and watches by, KEP-5866,
// metav1.ListOptions.ShardSelector) is cut into ranges, and each range is
// run by one member at a time. A Deployment, its ReplicaSets and its pods
// share a namespace: a namespace is the unit that moves.
//
// The entry points, in the order a user needs them:
//
//   - [Split], [Set], [ParseSelector]: ranges, and sets of them as
//     kube-apiserver's shard selectors ([Set.Selector]) and as a filter
//     ([Set.ContainsNamespace]); for a static split of N processes.
//   - [Member]: one member of a group that moves ranges between live
//     members, over coordination.k8s.io Leases. ctrlkit's kube.Operator
//     (Operator.Sharding) and ctrlkit-controller's --shard run it.
//   - [Core]: Member's pure core (Leases and time in, a [Plan] out), and
//     [Assign], which decides who should own what.
//
// # The protocol
//
// A group has one Lease per member ("<group>-<identity>", renewed every
// retry period, as leader election renews its Lease; its annotation
// [AnnotationRunning] lists the ranges the member runs) and one
// assignment Lease ("<group>", annotation [AnnotationAssignment]: the
// layout of the ranges and, per range, its owner and an epoch). Which
// member should own a range follows from the live members alone
// ([Assign]: balanced rendezvous hashing). Members move ranges by
// conditional updates of the assignment; the assignment is the only
// source of truth.
//
// # Guarantees
//
//   - A range runs on a member only after that member's own conditional
//     write of the assignment named it, and after its own Lease claims it.
//   - A member stops writing before its Lease could expire: past the renew
//     deadline without a successful renewal it stops every range, and
//     [Member.MayWrite], put in front of every write, refuses them. Writes
//     in flight then have the lease duration minus the renew deadline to
//     land.
//   - A range handed over between live members is stopped (its writes
//     drained) before it is released, and started afresh (new caches and
//     expectations) by its new owner.
//   - A range of a member that seems gone is taken only once its Lease has
//     not changed for a lease duration, read afresh (never from a cache)
//     after the entry naming it was written.
//   - Hand edits (a garbled or deleted assignment, an entry freed or given
//     without a release, a member's Lease deleted or garbled) stop the
//     ranges concerned; they are taken again only once every other
//     member's Lease, read afresh, shows it does not run them. Two
//     processes with one identity, or a group cut into another number of
//     ranges, are fatal errors ([ErrFatal]).
//   - Time is an input: [Core] reads no clock; [Member] runs on a
//     clock.Clock (the real one, or a testing/synctest bubble).
//
// # Where the I/O is
//
// [Core] does none: [Core.Observe] and [Core.Read] take Leases,
// [Core.Decide] returns what to do. [Member.Run] does it all: it renews,
// reads and writes the Leases through a [LeaseClient] (client-go's typed
// client and memcluster's both are one), follows them with an informer,
// and runs [MemberConfig.RunRange] for each range it owns, in a goroutine
// of its own, until the range must stop.
//
// # Usage
//
//	m, err := shard.NewMember(shard.MemberConfig{
//		Config: shard.Config{Group: "ctl", Identity: "pod-0", Ranges: 16,
//			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
//		Namespace: "kube-system", Leases: cs.CoordinationV1().Leases("kube-system"), Watch: leaseListWatcher,
//		RunRange: func(ctx context.Context, r shard.Start) error {
//			return runControllers(ctx, shard.MustSet(r.Range)) // informers with ShardSelector: set.Selector()
//		},
//	})
//	if err != nil {
//		return err
//	}
//	return m.Run(ctx)
package shard
