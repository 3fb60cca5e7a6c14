// Package controllerruntime runs ctrlkit's Deployment and ReplicaSet
// controllers in a controller-runtime Manager, one call each:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{})
//	if err != nil {
//		return err
//	}
//	if err := controllerruntime.Add(mgr, controllerruntime.Options{}); err != nil { // both controllers
//		return err
//	}
//	return mgr.Start(ctx)
//
// [AddDeploymentController] and [AddReplicaSetController] register one
// controller each. What a registration wires, so that user code need not:
//
//   - reads from the manager's cache, with the field indexes the
//     controllers read through (pods and ReplicaSets by controller UID, and
//     orphans by namespace) registered on it;
//   - writes with the manager's client, and the live reads that guard
//     adoption and status retries with its API reader;
//   - events through the manager's event recorder, with upstream's source
//     components (deployment-controller, replicaset-controller);
//   - the logger the manager puts in each Reconcile's context;
//   - controller-runtime's controller, so the work queue and reconcile
//     metrics land in its metrics registry (metrics.Registry, which the
//     manager serves), with ctrlkit_syncs_skipped_total{controller} beside
//     them: the syncs skipped while the cache lagged behind the
//     controller's own writes (below), named as package kube names it, by
//     controller name (deployment-controller, replicaset-controller);
//   - upstream's watch and event-handler rules (deployment.EventRules,
//     replicaset.EventRules), with the ReplicaSet controller's expectation
//     observers fed from the same events: without them every rollout step
//     would wait out the five-minute expectation timeout;
//   - reconcile.Terminal errors become controller-runtime TerminalErrors
//     (not retried), Result.RequeueAfter carries over;
//   - waiting for the controllers' own writes: a sync is skipped while the
//     cache still holds a version the last sync replaced (the write's event
//     enqueues the key again), so neither controller decides on an object it
//     knows to be stale (a skipped ReplicaSet sync is a rate-limited
//     requeue, counting toward the key's backoff as upstream's failed
//     consistency check does). [Add] shares the marks between both controllers,
//     so the ReplicaSet controller waits for a scale's event before writing
//     that ReplicaSet's status. The Deployment controller also waits for
//     the ReplicaSets it creates, as the packaged one does: until the cache
//     has the ReplicaSet the last sync created, or a live read (the API
//     reader) says it is gone, the next sync of that Deployment is skipped;
//     a failed create, which may have happened, is settled the same way.
//     Otherwise a sync on a cache without it, with a new template by then,
//     would create a second ReplicaSet at full size with a duplicate
//     revision (docs/fidelity.md, "Deliberate differences").
//
// [Options] sets the workers, the rate limiter, a namespace and a label
// restriction, a batch period and upstream's status timing. A manager
// whose cache is restricted (cache.Options DefaultNamespaces, label or field
// selectors by object) works too: the controllers see what the cache holds.
//
// # Differences from the packaged controllers
//
// controller-runtime's controller retries a failing key with backoff until
// it succeeds; kube-controller-manager's Deployment controller (and
// deployment.Controller) drops a key after 15 retries until its next event.
//
// # Testing
//
// The unit tests run on controller-runtime's fake client, and TestAdd
// runs [Add] in a real Manager on the in-memory cluster of package
// clustertest (its own Deployment and ReplicaSet controllers off), on
// virtual time: rollouts to completion with each of the [Options]
// and with a namespace-restricted cache. The e2e
// directory (build tag e2e, run by kube/hack/e2e.sh) runs both controllers
// in a Manager against a real kube-apiserver, and kube/e2e/compare runs the
// operator of examples/controllerruntime side by side with
// kube-controller-manager.
package controllerruntime
