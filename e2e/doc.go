// Package e2e holds the end-to-end tests of this library: the Deployment
// and ReplicaSet controllers run together, wired through informers and work
// queues as in kube-controller-manager, against the in-memory API server of
// package memcluster with its simulated kubelet, on a virtual clock.
//
// The package has no API; it is all tests. Every test records every watch
// event of Deployments, ReplicaSets and pods, and when it ends replays the
// whole history in resourceVersion order (the cluster has a single
// counter, so the order is exact) and checks invariants at every state:
//
//   - a rolling update never runs more than spec.replicas + maxSurge pods
//     (the sum of its ReplicaSets' spec.replicas), nor fewer than
//     spec.replicas − maxUnavailable available pods, once it has been
//     complete, except while a resize or a change of strategy is being
//     handled;
//   - a ReplicaSet never creates a pod it did not ask for, and never deletes
//     one it still needed; every pod that goes away was deleted by the
//     ReplicaSet controller or collected with its owner;
//   - a pod has at most one controller, a Deployment at most one
//     ReplicaSet with its current template, and no two of its ReplicaSets
//     share a revision;
//   - revision numbers only grow, except a Deployment's once history
//     cleanup has deleted every ReplicaSet that held the higher ones (the
//     next ReplicaSet is numbered from what is left, as upstream);
//   - a Recreate rollout starts no new pod while an old one exists. Only
//     the rollout promises that: a paused Deployment or a scaling event
//     goes through upstream's scale(), which sizes a ReplicaSet at once,
//     old pods or not, so pods of a ReplicaSet last grown that way are
//     exempt.
//
// Tests run in virtual time and never sleep. Two families of randomised
// runs with fault injection print their seed: TestRandomised (random
// changes of random Deployments while the API fails requests, lags and
// drops watches) and TestRandomisedGates (the same, from a stream of its
// own, with the controllers' feature gates switched at random mid-run
// and random pod-deletion costs). Replay one with
//
//	CTRLKIT_E2E_SEED=42 go test -run TestRandomised ./e2e
//	CTRLKIT_E2E_SEED=42 go test -run TestRandomisedGates ./e2e
//
// By default seeds 1-4 run (CI's time). CTRLKIT_SOAK=1 runs seeds 1-200,
// CTRLKIT_SOAK_SEEDS any list of seeds and ranges (1-2000, or
// 283,438,456).
//
// # Clock modes, and replaying a failure
//
// By default every world runs on clock.NewDeterministic: the work of an
// instant one unit at a time, oldest first. CTRLKIT_E2E_CONCURRENT=1 runs
// it on clock.NewInterleaved instead: one unit at a time, in an order
// drawn from the seed (which of an instant's work goes first: a worker's
// request or a watch event, one handler or another; every request of a
// controller, informer or kubelet gives up its turn before it is
// served), and records the turns it took. CTRLKIT_E2E_INTERLEAVE=n draws
// the interleaving from n instead of the run's seed. Either way a seed
// replays exactly, and a failure prints the line that replays it and
// writes the interleaving it took to a file that
// CTRLKIT_E2E_SCHEDULE=@file replays. CTRLKIT_E2E_CONCURRENT=parallel runs
// the work of an instant on goroutines at once (clock.NewFake): any
// interleaving the machine makes, none recorded, for -race.
//
// # Liveness
//
// A Deployment whose spec can be met (not paused, its pods' image not
// one the kubelet fails) never ends with nothing left to do and its spec
// unmet: at every stall the clock reports (no work, no timer pending),
// during a wait for convergence or between two random changes, a
// Deployment that can be met must be rolled out, or the test fails
// naming it and what the controllers know of it. See docs/replay.md.
//
// # Soak before a release
//
// A maintainer runs seeds 1-5200 of both families in the three clock modes
// before a release, at low priority on a shared machine:
//
//	go test -c -race -o e2e.test ./e2e
//	CTRLKIT_SOAK_SEEDS=1-5200 nice -n 19 ./e2e.test -test.run 'TestRandomised' -test.timeout 6h
//	CTRLKIT_SOAK_SEEDS=1-5200 CTRLKIT_E2E_CONCURRENT=1 nice -n 19 ./e2e.test -test.run 'TestRandomised' -test.timeout 6h
//	CTRLKIT_SOAK_SEEDS=1-5200 CTRLKIT_E2E_CONCURRENT=parallel nice -n 19 ./e2e.test -test.run 'TestRandomised' -test.timeout 6h
//
// ('TestRandomised' matches both families.) Split the range across
// processes to use more cores (1-2600 and 2601-5200). Every failing seed
// is either fixed with a deterministic regression test or documented as
// upstream's behaviour before the release; seeds found so far: 6, 484,
// 1535, 1620, 1788, 3878, 4019 (docs/fidelity.md, "Deliberate differences"), and
// 7397 of TestRandomisedGates in the goroutine-concurrent mode (its cause
// is not known; TestSeed7397EndState pins a memcluster bug that led to
// its end state; see docs/replay.md).
//
// BenchmarkScale rolls out 10,000 Deployments of 10 replicas:
//
//	go test -run xxx -bench BenchmarkScale -benchtime 1x ./e2e
package e2e
