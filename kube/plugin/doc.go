// Package plugin is the logic of kubectl-ctrlkit, the kubectl plugin that
// points the planner at a live cluster:
//
//   - why: reads a Deployment, its ReplicaSets and pods (and the
//     namespace's PodDisruptionBudgets, HorizontalPodAutoscalers,
//     ResourceQuotas, LimitRanges, other Deployments, warning events, the
//     Deployment's own events and, when its generation waits for a
//     controller, the controllers' leader Leases; while its spec.replicas
//     flips, the writes of it, watched) and says why the rollout is stuck:
//     the controller's own inequalities (planner.Explain) and the causes
//     behind them, naming pods, reasons and writers, each with what would
//     unblock it; or, for a rollout that progresses, when the planner
//     expects it to complete, and whether a quota slows it ([Why]). A
//     quota blocks only when the planner, enforcing it, does not see the
//     rollout complete; a fight over the spec ends after [FightDecay]
//     flip periods without a flip;
//   - plan: a what-if from the live state (a new image or a changed
//     manifest), simulated with the real controllers, the namespace's
//     quotas and limit ranges, and a pod model measured on the live pods
//     ([PlanLive], [ObservedModel]);
//   - history: the revisions, with the change between consecutive pod
//     templates that `kubectl rollout history` does not show ([History]).
//
// [Fetch] is the only function that talks to the API server (it watches
// only with FetchOptions.Observe); Why, PlanLive,
// History and the printers are pure (time is a parameter) and are tested
// on client-go's fake clientset and fixtures. [Execute] is the command
// line: cobra commands over cli-runtime's standard kubeconfig, context and
// namespace flags, output as text, JSON or YAML, and exit codes scripts
// can use ([ExitOK], [ExitStuck], [ExitError]).
package plugin
