// Package examples is the guided tour of this library: runnable programs
// and examples that wire its packages together. Nothing imports it.
//
// The library splits each controller into a pure core that decides
// (deployment.Sync, replicaset.ManageReplicas, the arithmetic of package
// rollout) and a thin shell that reads, writes and schedules
// (the Reconcilers and Controllers, informer, workqueue). The examples
// show both halves, and how they meet a cluster:
//
//   - This package's Example is the walkthrough: the in-memory API server
//     of package memcluster, an informer per kind, a work queue fed by
//     informer handlers, and a hand-written worker loop around
//     deployment.Reconciler, with the packaged ReplicaSet controller and a
//     simulated kubelet alongside. It creates a Deployment, updates its
//     image and prints what the cluster ends up with.
//   - examples/rollout (the README's `go run ./examples/rollout`) runs a
//     rollout of 10 replicas in virtual time and prints a live timeline of
//     ReplicaSet sizes, pods, conditions and events, then a summary; flags
//     change the strategy, the bounds, the pod readiness delay, and inject
//     failures (bad images, crash loops, API errors).
//   - examples/operator embeds both controllers in one process, the way a
//     custom operator would: informers, queues, both controllers, graceful
//     shutdown on a signal. It runs on memcluster; the kube module's
//     adapters run the same wiring against a real cluster.
//   - examples/rolloutmath shows how to unit-test rollout arithmetic with
//     package rollout and deployment.Sync alone: no cluster, no clock, no
//     goroutines.
//
// Everything runs in memory and in virtual time, so the examples finish in
// milliseconds and are checked by go test.
package examples
