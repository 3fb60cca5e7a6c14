// Package planner answers three questions about a Deployment rollout that
// kube-controller-manager and kubectl leave open:
//
//   - What will it do? [Simulate] runs the real Deployment and ReplicaSet
//     controllers of this module (packages deployment and replicaset)
//     against an in-memory API server (package memcluster) in virtual time,
//     with pods that follow a [PodModel], and returns a [Timeline]: every
//     step's ReplicaSet sizes and ready, available and terminating
//     counts, conditions and events; total duration; peak pods; minimum
//     availability; and, if it never completes, where it stalls and why.
//     What-ifs (a scale event or a new template mid-rollout) are
//     [Change]s. The pods it creates go through the namespace's
//     admission as kube-apiserver's would ([Options.LimitRanges],
//     [Options.Quotas]: [ApplyLimitRanges], [AdmitPod]): a quota slows the
//     rollout (a refused pod waits for room) or stalls it.
//   - Did it behave? [Check] verifies the rollout invariants — surge and
//     unavailability bounds, revisions only increasing, no old ReplicaSet
//     growing during a roll-forward, completion reported — over a [Trace],
//     from a timeline or recorded on a real cluster ([TraceFrom]).
//   - Why is it stuck? [Explain] turns a Deployment, its ReplicaSets and
//     pods into structured [Blocker]s, computed with the controller's own
//     inequalities from package rollout, with unavailable pods classified
//     by cause ([ClassifyPods]).
//
// Check, Explain, ClassifyPods, TraceFrom, PodUsage, AdmitPod and
// ApplyLimitRanges are pure: no I/O, no clock
// (time is a parameter), inputs never modified. Plan owns its simulation
// and is deterministic: the same inputs and [Options.Seed] give the same
// timeline.
//
// # Usage
//
// Plan an image update of a running Deployment and check it:
//
//	prev, err := planner.Previous(d, oldTemplate) // the current state
//	tl, err := planner.Simulate(d, []*appsv1.ReplicaSet{prev}, planner.PodModel{
//		ReadyAfter: 10 * time.Second, ReadyJitter: 5 * time.Second, CrashLoop: 0.05,
//	}, planner.Options{Seed: 1})
//	fmt.Print(tl) // the table
//	for _, v := range planner.Check(tl.Trace(), d) {
//		fmt.Println(v)
//	}
//
// Explain a live rollout (objects from listers or a client):
//
//	for _, b := range planner.Explain(d, replicaSets, pods, time.Now()) {
//		fmt.Printf("%s: %s\n", b.Code, b.Message)
//	}
//
// Check a recorded rollout: collect a [Snapshot] of the Deployment and its
// ReplicaSets at every watch event, then Check(TraceFrom(snapshots), d).
//
// # How Plan drives the controllers
//
// Plan does not use informers, work queues or goroutines of its own. It
// runs a single-threaded loop: at each virtual instant, rounds of
// "kubelet sync, Deployment reconcile, every ReplicaSet reconcile (name
// order)" repeat until a round writes nothing; then the fake clock jumps
// to the earliest pending event (a pod transition, a reconciler's
// RequeueAfter, a Change). Reconcilers read the API server directly, so
// every sync sees every earlier write; ReplicaSet expectations are
// therefore always satisfied. The steps and sizes are the controllers';
// a real cluster adds latency between them.
package planner
