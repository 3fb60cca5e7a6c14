// Package memcluster is an in-memory Kubernetes API server with a virtual
// clock and a simulated kubelet. Run the controllers of this library, or
// your own operator, against it without a cluster, and test rollouts that
// take hours of virtual time in milliseconds, reproducibly.
//
// It is a shell in the sense of this library: the one place where
// requests, watches and time meet. It implements the semantics controllers
// observe, not a toy:
//
//   - One cluster-wide resourceVersion counter; every object carries the
//     version of its last write. Update with a stale resourceVersion (or
//     another UID) fails with Conflict; an empty resourceVersion updates
//     unconditionally, as the apiserver allows for these kinds. Create of
//     an existing name is AlreadyExists, a missing object NotFound. All
//     errors are *apierrors.StatusError values.
//   - Server-owned fields: uid, creationTimestamp (virtual clock, whole
//     seconds), generation (1 on create; bumped by spec changes, by
//     annotation changes of Deployments, and when deletion starts),
//     generateName with a seeded 5-character suffix and retries.
//   - Update keeps the status; UpdateStatus changes only the status. A
//     write that changes nothing stores nothing and keeps the version.
//   - Patch: strategic merge (from the typed structs' merge keys, e.g.
//     "$patch":"delete" of an ownerReference by uid), JSON merge, and JSON
//     patch. A uid or resourceVersion in the patch is a precondition.
//   - Delete: uid/resourceVersion preconditions; graceful pod deletion
//     (the pod keeps a deletionTimestamp until its kubelet confirms);
//     finalizers; garbage collection of dependents through
//     ownerReferences, Background (the default) or Orphan. Foreground is
//     treated as Background.
//   - apps/v1 and core/v1 defaults (including the pod-spec defaults that
//     enter the pod-template-hash) and the validation controllers rely on,
//     as Invalid errors with the apiserver's field paths.
//   - List returns deep copies sorted by namespace and name, with the
//     current resourceVersion. Watch replays the events after a version
//     from a bounded history, answers a compacted version with a 410
//     Expired error event, sends bookmarks (periodic, or on
//     [Cluster.Bookmark]), and translates label-selector transitions into
//     Added and Deleted events.
//   - Every object returned, listed or watched is a private deep copy,
//     round-tripped through JSON as a real client would see it.
//
// # Clients
//
// [Cluster.Pods], [Cluster.ReplicaSets] and [Cluster.Deployments] return a
// [Client] bound to a namespace ("" means all namespaces for List and
// Watch). Its methods mirror client-go's typed clients — context first,
// options structs last — except that List returns the items and the
// resourceVersion. [Client.ListWatcher] satisfies informer.ListWatcher.
// Other kinds can be stored with [NewResource] and a [Kind].
//
// # Time and simulation
//
// Everything time-dependent runs on [Config.Clock]. Give the cluster, the
// work queues, the informers and the kubelet the same *[clock.Fake], and
// drive it with [Cluster.RunUntil], which alternates letting goroutines
// settle and jumping to the next timer. Settling is a documented
// heuristic (see RunUntil); [Cluster.AddIdleCheck] makes it exact for the
// queues you register. With [clock.Real] the same code runs in real time,
// for demos.
//
// # Slow watchers
//
// The API never blocks on a watcher. Each watch buffers up to
// [Config.WatchBuffer] events; a watcher that falls further behind is
// terminated, as kube-apiserver does: its channel closes and the client
// must watch again from the last version it saw (which the history still
// holds if [Config.WatchHistory] is large enough), or list again after a
// 410.
//
// # Faults
//
// [Cluster.SetFaults] injects seeded, reproducible errors per verb and
// kind (before or after the write takes effect), latency on the cluster
// clock, lagging watch delivery and dropped watches.
//
// # Differences from kube-apiserver
//
// No admission, RBAC, field managers, server-side apply, dry run,
// pagination, field selectors beyond metadata.name/namespace, or
// Foreground deletion; UpdateStatus ignores metadata changes (the
// apiserver keeps some); garbage collection is synchronous, inside the
// write that orphans an object; the watch history is per kind.
//
// # Usage
//
//	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
//	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{})
//	go kubelet.Run(ctx)
//	// Wire informers on c.Pods("").ListWatcher() etc. and queues on fc,
//	// start your controllers, then:
//	_, err := c.Deployments("default").Create(ctx, d, metav1.CreateOptions{})
//	err = c.RunUntil(ctx, rolledOut, time.Hour)
package memcluster
