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
//     normalised as a real client would see it after a JSON round trip
//     (times at whole seconds, empty omitempty collections as nil, …;
//     without encoding anything, see normalize.go). One exception, by
//     request: a watch consumer that never modifies what it receives
//     may call ShareObjects on the watch and then receives the stored
//     snapshots themselves (see informer.SharingWatcher). This library's
//     informer does, whose cache hands out shared read-only objects
//     anyway: the in-memory cluster and its informers then hold one copy
//     of each object instead of two. Modifying an object from such an
//     informer, which its documentation forbids, then changes what the
//     cluster serves; `go test -race` reports it as a data race.
//
// # Clients
//
// [Cluster.Pods], [Cluster.ReplicaSets] and [Cluster.Deployments] return a
// [Client] bound to a namespace ("" means all namespaces for List and
// Watch). Its methods mirror client-go's typed clients — context first,
// options structs last — except that List returns the items and the
// resourceVersion. [Client.ListWatcher] satisfies informer.ListWatcher.
// Other kinds can be stored with [NewResource] and a [Kind]: [KindFor]
// derives one from a Go type registered in a runtime.Scheme (your custom
// resources, with the semantics of CRDs), and [AddCoreKinds] adds
// Namespaces, Services, ConfigMaps, Secrets, ServiceAccounts, Events and
// Leases. Owner references and garbage collection work across all kinds.
//
// # The REST API
//
// [Handler] serves the cluster over the Kubernetes REST API, and
// [Transport] carries requests to it in the calling process, so unchanged
// client-go and controller-runtime code runs against the cluster without
// a socket, a port or a binary:
//
//	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
//	clientset, err := kubernetes.NewForConfig(cfg) // or dynamic.NewForConfig, ctrl.NewManager(cfg, …)
//
// Tested with client-go v0.37 (typed clientsets, the dynamic and metadata
// clients, discovery and its REST mapper, shared informers) and
// controller-runtime v0.25 (a Manager with its cache, client and REST
// mapper). What is served is what those clients use:
//
//   - Discovery: /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>
//     and /version. Clients that ask for aggregated discovery first (all of
//     client-go's) get the legacy documents, which they read as from an
//     apiserver without aggregated discovery.
//   - get, list, watch, create, update, patch, delete and deletecollection
//     of every kind, the status subresource of kinds that have one, and the
//     scale subresource (autoscaling/v1) of Deployments and ReplicaSets.
//     Each request is admitted like a [Client] call, so injected faults
//     reach REST clients as the status codes kube-apiserver uses, with a
//     Retry-After header where the error asks to wait (429, server timeout).
//   - JSON and YAML, and protobuf for k8s.io/api types (client-go's typed
//     clients and controller-runtime send protobuf for built-in kinds);
//     metadata-only responses (as=PartialObjectMetadata) for the metadata
//     client and metadata informers.
//   - Watches stream metav1.WatchEvent frames as kube-apiserver does, with
//     bookmarks, label and field selectors, a 410 Expired ERROR event for a
//     compacted resourceVersion, and watch-list (sendInitialEvents, which
//     client-go's informers use by default): the current state, then a
//     bookmark annotated k8s.io/initial-events-end.
//   - Errors are metav1.Status values: 404, 409, 410, 422, 429, 500, ...
//
// # Time and simulation
//
// Everything time-dependent runs on [Config.Clock]. Give the cluster, the
// work queues, the informers and the kubelet the same *[clock.Fake], and
// drive it with [Cluster.RunUntil]: it lets the work of the current
// instant finish, then jumps to the next timer. Virtual time is exact:
// the cluster's watches and kubelet, and the queues and informers of this
// library, report every hand-off of work to the clock (see
// [clock.Source]), so time moves only when nothing can happen any more at
// the current instant. That is a fact, not a wall-clock guess, so a
// simulation takes the same virtual time on a busy machine as on an idle
// one, and a system with nothing left to do is reported at once. With a
// clock from [clock.NewDeterministic] the work of an instant also runs one
// piece at a time in a fixed order: same seed, same trace.
//
// What takes part:
//
//   - Watch events are tracked work from the moment they are due (at the
//     write, or later with injected lag) until the consumer has received
//     them, or, for a consumer that calls AckEvents on the watch (this
//     library's informer does), until it acknowledges them. The end of a
//     watch that ends by itself is tracked the same way.
//   - The kubelet is tracked work from [NewKubelet] until its first sync,
//     and on every pod write and transition that is due until the sync it
//     causes has finished.
//   - Injected latency waits with [clock.Sleep]: the caller must be doing
//     tracked work (every request of a controller or informer is). A
//     request from your test's own goroutine with latency on a fake clock
//     waits until something moves the clock.
//   - Your own goroutines take part through [clock.Source]. Build and start
//     every component before calling RunUntil: a goroutine that builds
//     them races with it.
//
// With [clock.Real] the same code runs in real time, for demos.
//
// # Virtual time with REST clients
//
// client-go's informers and work queues do not report their work to a
// [clock.Fake], so [Cluster.RunUntil] cannot know when they are done. Run
// code that uses client-go or controller-runtime in a testing/synctest
// bubble instead, with the cluster on the real clock (a nil
// [Config.Clock]): the transport has no socket, so every goroutine of the
// stack blocks durably when idle, synctest.Wait returns once the clients
// have handled what happened, and time.Sleep(time.Hour) (or a reconciler's
// RequeueAfter) passes an hour of virtual time at once.
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
// # Custom resources
//
// A kind without a Go type is a [CustomKind]: what a
// CustomResourceDefinition says (group, names, scope, versions, the
// status and scale subresources), served as kube-apiserver serves it.
// Objects are *unstructured.Unstructured, stored in the storage version
// and served in every served version: a request in another version is
// read as kube-apiserver reads from etcd (the storage version's schema
// prunes and defaults, the apiVersion changes, the request version's
// schema prunes), and written back the other way. Each version's
// [CustomSchema] prunes, defaults and validates (the update's old object
// is in the request's version, for ratcheting and transition rules); this
// module has no schema of its own to apply, so package
// controllerruntime/crd fills it with apiextensions-apiserver's. The
// generation follows any change outside metadata (the status excluded
// where it is a subresource), updates need a resourceVersion, strategic
// merge patches are 415; discovery lists short names and categories.
// [AddCustomKind] adds one, [Tx.ServeCustom] changes it keeping its
// objects, and [RemoveCustomKind] removes it as kube-apiserver does when a
// CRD is deleted: creates are refused, every object is deleted (finalizers
// hold theirs), and the kind goes when the last one has.
//
// package controllerruntime/crd serves CustomResourceDefinitions
// themselves on this: a [Kind.Stored] hook does, inside the request that
// wrote a CRD, what kube-apiserver's controllers do after it (accept its
// names, establish it, serve its kind; clean up on deletion), writing
// through a [Tx].
//
// # Differences from kube-apiserver
//
// No admission, RBAC, authentication, field managers, server-side apply
// (its patches are answered 415), dry run (400), pagination (limit is
// ignored, as the API allows, and no continue token is issued), field
// selectors beyond metadata.name/namespace (400 for others), or Foreground
// deletion; UpdateStatus ignores metadata changes (the apiserver keeps
// some); garbage collection is synchronous, inside the write that orphans
// an object; the watch history is per kind. Lists are served at the
// current resourceVersion only: an older one with resourceVersionMatch
// Exact is 410 Expired. A watch's timeoutSeconds is ignored (watches end
// when their client leaves, or when the cluster drops them). No OpenAPI,
// Table or aggregated discovery documents, so kubectl's explain and
// printing of columns do not work. Kinds of your Go types ([KindFor]) have
// no schema: no validation or defaulting beyond metadata's unless you set
// [Kind.Validate] and [Kind.Default], one version, no scale subresource;
// kinds without a Go type ([CustomKind]) have what a
// CustomResourceDefinition gives (see Custom resources), except conversion
// webhooks, which are not called: such a kind is served in its storage
// version only, and requests in another answer 500 saying so. Warnings
// (unknown fields dropped, deprecated versions) are not sent, and
// fieldValidation=Strict is not applied. Namespaces are not enforced: objects may be
// created in one that does not exist, and deleting one leaves its
// contents.
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
