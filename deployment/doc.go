// Package deployment is the Kubernetes Deployment controller (upstream
// kube-controller-manager v1.37, pkg/controller/deployment) as a pure
// decision function plus a thin, embeddable shell.
//
// Entry points:
//
//   - [NewController] (with informers and a [Client]) and Controller.Run:
//     the controller, ready to run; controlplane.Start runs it, with the
//     ReplicaSet controller and a kubelet, on an in-memory cluster;
//   - [NewReconciler] and Reconciler.Reconcile: one sync of a key, for a
//     shell of your own (controller-runtime's, say);
//   - [Sync]: the pure decision, a [State] in and a [Plan] out; [WritePlan]
//     makes its writes;
//   - [EventRules]: which Deployments an informer event asks to sync;
//   - [Workload]: the same controller for a custom resource.
//
// The core is [Sync]: given a [State] (the Deployment, the ReplicaSets of
// its namespace and, for Recreate, their pods) and the time, it returns a
// [Plan]: the ReplicaSets to create, scale, update, delete, adopt or
// release, the events to record, the Deployment status to write, and when
// to look again. Its decisions are upstream's — the same sizes, names,
// revisions, annotations, conditions and events, in the same order — and
// it leans on package rollout for all strategy math.
//
// Guarantees:
//
//   - Sync is pure: no I/O, no clock, no goroutines, no context; it never
//     modifies its input.
//   - A plan writes the Deployment status at most once, last, computed from
//     the ReplicaSets as they are after the plan's own writes (upstream
//     writes it up to three times per sync, with a stale resourceVersion).
//   - Hash collisions are decided from the snapshot: a ReplicaSet that
//     already holds the new name with another template makes the plan bump
//     status.collisionCount instead of creating anything.
//   - Applying a plan and syncing again reaches a plan that writes nothing.
//
// # Where the I/O happens
//
// Only [WritePlan], [Reconciler], [EventRules] and [Controller] talk to the
// world. They read through the context-taking interfaces shared by every
// ctrlkit controller ([reconcile.Getter], [reconcile.Lister],
// [reconcile.ByController]; [reconcile.FromCache] serves them from an
// informer cache) and write through the small interfaces declared here
// ([Client], [EventRecorder]).
//
//   - [WritePlan] executes a plan in order and reports how far it got.
//   - [Reconciler] reads a snapshot, calls Sync, re-checks the Deployment
//     live before adopting ReplicaSets, and applies the plan. It returns a
//     [reconcile.Result]; errors it must not retry are
//     [reconcile.Terminal]. Its logger comes from the context.
//   - [EventRules] are upstream's event-handler rules as functions: which
//     Deployments an informer event asks to sync.
//   - [Controller] applies them to informers of package informer and runs
//     workers that call the Reconciler.
//
// Package replicaset has the same shape: NewReconciler(ReconcilerConfig),
// NewController(ControllerConfig), EventRules, Controller.Reconciler.
//
// The Controller's own Reconciler (ControllerConfig.Reconciler nil) does
// two things upstream does not, neither of which changes a decision:
//
//   - it reads the ReplicaSets a Deployment controls and the namespace's
//     orphans through an index ([ReplicaSetsByController]) instead of listing the
//     namespace, so 10,000 Deployments in one namespace cost what each
//     owns, not O(n²);
//   - it waits for its own writes: after a sync that created or scaled a
//     ReplicaSet or wrote the status, the next sync of that Deployment
//     waits until the informer caches have the new versions (their events
//     enqueue it anyway), where upstream decides again on the stale copies:
//     its writes fail with Conflict, and a ReplicaSet it created and does
//     not see yet is created again at full size. A failed create is
//     settled with a live read, and so is a failed ReplicaSet update or
//     patch ([WritePending]): it may have happened, and a rollout step
//     sized on the stale spec.replicas goes beyond maxSurge (e2e soak
//     seed 3878). The marks live in the shared ReplicaSet
//     cache, so a ReplicaSet controller on the same cache waits for a
//     scale's event before writing that ReplicaSet's status.
//
// # Feature gates
//
// ControllerConfig.FeatureGates, ReconcilerConfig.FeatureGates and
// State.FeatureGates (a features.Gates; the zero value is
// kube-controller-manager v1.37's defaults) switch the gates upstream's
// Deployment controller consults, and Reconciler.SetFeatureGates switches
// them on a running controller. It consults one: with
// DeploymentReplicaSetTerminatingReplicas off, the status's
// terminatingReplicas is nil (rollout.StatusOptions.CalculateStatus).
//
// # Usage
//
// One step, with your own client:
//
//	plan, err := deployment.Sync(deployment.State{Deployment: d, ReplicaSets: rss}, time.Now())
//	if err != nil {
//		return err
//	}
//	_, err = deployment.WritePlan(ctx, client, recorder, plan)
//
// One sync, reading informer caches:
//
//	r, err := deployment.NewReconciler(deployment.ReconcilerConfig{
//		Deployments: deployments, ReplicaSets: replicaSets, Pods: pods, // e.g. reconcile.FromCache(...)
//		Client: client,
//	})
//	res, err := r.Reconcile(ctx, types.NamespacedName{Namespace: "default", Name: "web"})
//
// The whole loop:
//
//	c, err := deployment.NewController(deployment.ControllerConfig{
//		Deployments: dInformer, ReplicaSets: rsInformer, Pods: podInformer,
//		Client: client, Workers: 5,
//	})
//	go dInformer.Run(ctx) // and the other two
//	err = c.Run(ctx)
//
// To run it in a controller-runtime Manager, or beside client-go's shared
// informers, use the nested modules controllerruntime and kube.
//
// # Deviations from upstream
//
// docs/fidelity.md ("Deliberate differences from upstream") lists every
// deviation of the library in one place. Those of this package are each a
// defect fixed, not a different decision:
//
//   - the status is written once, last, from the state after the plan's
//     writes, so intermediate statuses (UnavailableReplicas computed from
//     ReplicaSet specs before a scale) are never written;
//   - errors upstream swallows (failed scale-downs) stop the plan and are
//     returned; errors from invalid objects return an empty plan;
//   - a single active ReplicaSet at the right size but with a stale
//     desired-replicas annotation gets its annotations refreshed, where
//     upstream treats every sync as a scaling event forever and never rolls
//     out a new template;
//   - a scaling event of a non-RollingUpdate Deployment with several active
//     ReplicaSets and an unsaturated new one goes to the rollout (Recreate
//     scales the old ones down, rewriting their annotations), where
//     upstream's scale() does nothing for it and every later sync is the
//     same scaling event, forever;
//   - the progress-deadline requeue waits at least a second instead of
//     polling through the rate limiter, and is not scheduled when the
//     Progressing reason is NewReplicaSetAvailable (time cannot change the
//     outcome then);
//   - revision-history cleanup sees the ReplicaSets as the plan left them
//     (upstream may delete a ReplicaSet it has just scaled up from zero);
//   - a Recreate rollout waits until the old ReplicaSets' statuses have
//     observed their generation (rollout.OldStatusPending): upstream trusts
//     a status.replicas of 0 written before the scale-down was seen;
//   - a rolling update does not count the new ReplicaSet's available pods
//     while its status has not observed its generation when it decides
//     how far old ReplicaSets may scale down (upstream trusts a status that
//     may count pods a scale-down has since deleted);
//   - a ReplicaSet whose template comes back during a resize has its
//     revision updated once (upstream sends the update twice, the second
//     from a stale copy);
//   - a rollback sync writes the Deployment, not also an unchanged status
//     (upstream writes the status subresource for the revision annotation
//     its update then writes again);
//   - a nil spec.replicas counts as 1, the API server's default
//     (rollout.DefaultReplicas; upstream dereferences it);
//   - ReplicaSets are deleted with a UID precondition;
//   - the Controller does not sync from a cached version its own last sync
//     replaced (see above), so it does not conflict with itself.
//
// One is a different timing, not a defect fixed: a sync whose only writes
// are ReplicaSet scales leaves the status to the sync their events
// trigger (fewer writes; same decisions and final status). Set
// [Reconciler.EagerStatus] or ControllerConfig.EagerStatus for upstream's
// timing.
package deployment
