// Package replicaset is the ReplicaSet controller of kube-controller-manager
// (v1.37) as a library: a pure core that decides, and a thin shell that
// reads, writes and schedules.
//
// Entry points:
//
//   - [NewController] (with informers and a [Client]) and Controller.Run:
//     the controller, ready to run;
//   - [NewReconciler] and Reconciler.Reconcile: one sync of a key, for a
//     shell of your own;
//   - [ManageReplicas]: the pure decision of a sync, an [Input] in and a
//     [Plan] out (pods to create or delete, the expectation, the status,
//     the requeue); [WritePods] makes its writes;
//   - [EventRules] and [Expectations]: which ReplicaSets an informer event
//     asks to sync, and what it tells the expectations.
//
// It keeps a ReplicaSet's number of active pods at spec.replicas: it adopts
// matching orphan pods and releases pods that no longer match, creates
// missing pods from the template, deletes surplus pods in upstream's
// deletion order, and writes the status (replica counts and the
// ReplicaFailure condition).
//
// # Guarantees
//
//   - The decisions are upstream's: the same deletion ranking (unscheduled,
//     pending, not ready, deletion cost, co-location, log-scaled ready time
//     and age, restarts), burst cap, slow-start batches, expectations and
//     status rules. Each exported function names its upstream counterpart.
//   - The core never performs I/O, reads a clock, starts a goroutine or
//     modifies its inputs. Time is a parameter.
//   - The shell returns every error, wrapped with the ReplicaSet key.
//   - Writes use preconditions: pod deletions and patches carry the pod UID,
//     status updates the resourceVersion (with one retry on a fresh copy).
//
// # Organization
//
// The core, in layers:
//
//   - [ManageReplicas] turns an [Input] snapshot and a time into a [Plan]:
//     [Action]s ([CreatePods], [DeletePods], [Event]), the [Pending]ation to
//     record, the status to write and a requeue delay.
//   - [RankForDeletion], [PodsToDelete] and [LessForDeletion] order pods for
//     deletion; [CalculateStatus], needsStatusUpdate and
//     nextAvailabilityCheck compute the status and when to look again;
//     [ClaimPods], [AdoptPatch] and [ReleasePatch] decide ownership;
//     [NewPod] builds a pod from the template; [SlowStartBatches] sizes
//     create batches.
//   - [Expectations] is the record of writes not yet seen through the
//     informer; it is safe for concurrent use and takes time as a parameter.
//
// The shell:
//
//   - [WritePods] executes a plan with a [PodWriter]: creates in slow-start
//     batches, deletes in parallel, and emits the pod events.
//   - [Reconciler] syncs one ReplicaSet key: read from caches, claim,
//     decide, apply, record expectations, write status. It reads through the
//     context-taking interfaces shared by every ctrlkit controller
//     ([reconcile.Reader], [reconcile.Lister], [reconcile.ByController];
//     [reconcile.FromCache] and [NewPodCache] serve them from informer
//     caches) and writes through [Client] and [EventRecorder]. It returns a
//     [reconcile.Result]; errors it must not retry are [reconcile.Terminal].
//     Its logger comes from the context.
//   - [EventRules] are upstream's event-handler rules as functions: which
//     ReplicaSets an informer event asks to sync, and which expectations it
//     fulfils ([Observation], [Expectations.Observe]).
//   - [Controller] wires ReplicaSet and pod informers to a workqueue with
//     those rules and runs workers until its context
//     ends. Unlike upstream it does not sync a ReplicaSet from a cached
//     version this process has already replaced (its own status write, or
//     a scale by a Deployment controller sharing the cache; see
//     informer.Cache.Behind): it waits for that write's event, which
//     enqueues the ReplicaSet anyway, instead of writing the status on the
//     old version and getting a Conflict.
//   - A sync whose pod creations and deletions all succeed leaves the
//     status to the sync their pod events trigger, which counts those pods
//     (one status write per round instead of two; see
//     [Reconciler.Reconcile]). ReconcilerConfig.EagerStatus restores upstream's
//     timing.
//
// # Feature gates
//
// ControllerConfig.FeatureGates and ReconcilerConfig.FeatureGates (a
// features.Gates; the zero value is kube-controller-manager v1.37's
// defaults) switch the gates upstream's controller consults, with
// upstream's behaviour each way; Reconciler.SetFeatureGates switches them
// on a running controller. [Input].FeatureGates carries them to
// [ManageReplicas]; calculateStatusWith and [RankForDeletionWith] take
// them too.
//
//   - DeploymentReplicaSetTerminatingReplicas off: status.terminatingReplicas
//     is written nil (and a count written while the gate was on is
//     cleared), and terminating pods are not collected.
//   - PodDeletionCost off: the deletion ranking ignores the
//     controller.kubernetes.io/pod-deletion-cost annotation.
//   - StaleControllerConsistencyReplicaSet off: the [Controller] does not
//     wait for its own writes (its status writes, a Deployment
//     controller's scales) to reach its cache before syncing a
//     ReplicaSet again; it syncs on whatever version the cache holds. On,
//     it waits for those writes, as upstream's consistency store waits for
//     its informers; the pods it creates and deletes are covered by its
//     expectations and by the live read of an expired expectation (below),
//     not by resource versions. The deliberate stale-cache fixes below stay
//     on either way.
//
// # Deviations from upstream
//
// docs/fidelity.md ("Deliberate differences from upstream") lists them all. In
// this package: an expectation that expired is not trusted while a live
// read shows the cache behind this controller's own creations or
// deletions: it is renewed, with an ExpectationsRenewed event
// (kubernetes#129795; ReconcilerConfig.TrustExpiredExpectations restores
// upstream's behaviour); pods the kubelet rejected are replaced with a
// bounded backoff, one at a time, with a RejectedPodsBackoff event naming
// the kubelet's reason ([RejectionBackoff]; kubernetes#72593;
// ReconcilerConfig.ReplaceRejectedPodsAtOnce restores upstream's pace); a
// sync that starts with its own creates or deletes
// unobserved does not advance status.observedGeneration (its pod cache is
// behind its own writes); a
// failed pod deletion is settled with a live read ([PodGetter]) before it
// stops being expected; pods are deleted with a UID precondition; no
// deletion-age metric is computed (upstream's can divide by zero); bad
// input gives an error, never a panic (a nil ReplicaSet, selector or pod,
// a negative spec.replicas); a nil spec.replicas counts as 1, the API
// server's default.
//
// # Usage
//
// To decide only, and apply with your own client:
//
//	plan, err := replicaset.ManageReplicas(replicaset.Input{
//		ReplicaSet: rs, Active: pods, ExpectationsSatisfied: true,
//	}, now)
//
// Package deployment has the same shape: NewReconciler(ReconcilerConfig),
// NewController(ControllerConfig), EventRules, Controller.Reconciler.
//
// To run the whole controller:
//
//	c, err := replicaset.NewController(replicaset.ControllerConfig{
//		ReplicaSets: rsInformer, Pods: podInformer, Client: client,
//	})
//	...
//	go rsInformer.Run(ctx)
//	go podInformer.Run(ctx)
//	err = c.Run(ctx) // returns once ctx is done and the workers have stopped
package replicaset
