// Package rolloutmath shows, in runnable examples, how to unit-test
// rollout arithmetic without a cluster, a client or a clock.
//
// The decisions of the Deployment controller are pure functions: package
// rollout answers one question at a time (how far may this rollout surge,
// how big should the new ReplicaSet be, which old ReplicaSets shrink), and
// deployment.Sync answers them all for one sync, as a Plan. Both take
// objects and a time and return values, so a test builds the objects it
// needs, calls the function and compares the result. To test a whole
// rollout, apply each plan to the objects in memory, pretend the pods
// came up, and sync again until the plan writes nothing: see
// Example_wholeRollout.
//
// The package has no API; it is all examples.
package rolloutmath
