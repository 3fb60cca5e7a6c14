// Package kube connects the controllers of ctrlkit to a real Kubernetes API
// server through client-go.
//
// The packages deployment and replicaset declare small interfaces for what
// they read and write; this package implements them with client-go:
//
//   - [DeploymentClient] and [ReplicaSetClient] write through a typed
//     clientset (kubernetes.Interface): they satisfy deployment.Client and
//     replicaset.Client.
//   - [NewInformerControllers] runs both controllers beside client-go's
//     shared informers, in five lines of user code; [FromInformer] reads a
//     shared informer's store through the readers of package reconcile (the
//     controllers' Reconcilers take them), adding the indexes they need.
//   - [Deployments], [ReplicaSets] and [Pods] return informer.ListWatcher
//     values over a typed clientset, and [FromListerWatcher] adapts a
//     client-go cache.ListerWatcher (cache.ListWatch), so that ctrlkit's own
//     informer can be fed by either.
//   - [StartEvents] records real core/v1 Event objects through client-go's
//     event broadcaster, with upstream's source components
//     ([DeploymentComponent], [ReplicaSetComponent]); [StartEventsAPI]
//     records events.k8s.io/v1 Events, with an [EventAction].
//   - [Operator] wires informers and both controllers against one cluster;
//     the ctrlkit-controller command runs it, with leader election,
//     /healthz and /metrics.
//   - [Metrics] are Prometheus collectors (client_golang) registered on a
//     registry the caller passes, with kube-controller-manager's and
//     client-go's series names, labels and buckets (workqueue_*,
//     rest_client_*, leader_election_master_status) and a few ctrlkit_*
//     series; [Metrics.Queue] is the controllers' work queue hook.
//   - [WriteCounter] is an http.RoundTripper that counts API requests by
//     verb and resource; [Metrics] exports the counts.
//
// Nothing here keeps global state: the client-go scheme is only read, and
// no constructor starts a goroutine. [Operator.Run] and the event
// recorder's broadcaster are the only long-lived goroutines, and both end
// with their context.
//
// End-to-end tests against a real kube-apiserver live in the e2e
// directory, behind the build tag e2e; hack/e2e.sh builds the control plane
// and runs them.
package kube
