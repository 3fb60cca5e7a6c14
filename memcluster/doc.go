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
//   - metadata.managedFields and server-side apply, as kube-apiserver
//     records and serves them, for the kinds the cluster has type
//     information for (see "Server-side apply").
//   - Patch: strategic merge (from the typed structs' merge keys, e.g.
//     "$patch":"delete" of an ownerReference by uid), JSON merge, and JSON
//     patch. A uid or resourceVersion in the patch is a precondition.
//   - Delete: uid/resourceVersion preconditions; graceful pod deletion
//     (the pod keeps a deletionTimestamp until its kubelet confirms; a pod
//     deleted at once is first written with its deletionTimestamp, as
//     kube-apiserver does); finalizers; propagation as kube-apiserver and
//     kube-controller-manager's garbage collector do it: Background (the
//     default, but Orphan for batch/v1 Jobs), Foreground (the
//     foregroundDeletion finalizer: the owner stays until the dependents
//     that set blockOwnerDeletion are gone) and Orphan (the orphan
//     finalizer: the references to the owner are removed first), the
//     legacy orphanDependents, and kube-apiserver's validation of the
//     options. See [Client.Delete].
//   - Namespaces have kube-apiserver's lifecycle: a deleted namespace is
//     Terminating, refuses new content (Forbidden, with the
//     NamespaceTerminating cause), and the namespace controller deletes its
//     content, reports on it in the namespace's conditions, then finalizes
//     it. With [Config.RequireNamespaces] (the test bench sets it) a
//     namespaced object needs its namespace, and default, kube-system,
//     kube-public and kube-node-lease exist from the start.
//   - PodDisruptionBudgets (policy/v1), with their status as the
//     disruption controller computes it, and the pods/eviction subresource
//     ([Cluster.Evict]), which honours them: 429 TooManyRequests with the
//     budget's reason when it is spent.
//   - kube-apiserver v1.37's API defaults (package defaults, including the
//     pod-spec defaults that enter the pod-template-hash) and the
//     validation controllers rely on (required fields, immutable fields
//     such as selectors), as Invalid errors with the apiserver's field
//     paths; the fields each kind's server strategy owns (a status reset
//     on create, generation rules, a Job's generated selector, …).
//   - List returns deep copies sorted by namespace and name, with the
//     list's resourceVersion; field selectors name the fields
//     kube-apiserver selects on for the kind (pods' spec.nodeName and
//     status.phase, events' involvedObject.*, ...: see [Kind.SelectableFields]),
//     and refuse the others with kube-apiserver's messages. [Client.ListPage]
//     and the REST API paginate (limit and continue, remainingItemCount)
//     as kube-apiserver does: later pages list the state of the first
//     page's version, a version the kind's watch history no longer reaches
//     is 410 Expired (with a token to continue inconsistently), and lists
//     at an older exact version are served from that history. Watch replays the events after a version
//     from a bounded history (a watch from "" or "0" starts with the
//     current objects as Added events, in resourceVersion order: a client
//     that watches from there and resumes from the last event it received
//     misses nothing; a fresh cluster is at resourceVersion 1, as a fresh
//     etcd, so its lists never answer "0" and a reflector never watches
//     from "0"), answers a compacted version with a 410
//     Expired error event, sends bookmarks (periodic, or on
//     [Cluster.Bookmark]), and translates label-selector transitions into
//     Added and Deleted events.
//   - Sharded lists and watches (KEP-5866): the shardSelector parameter
//     (metav1.ListOptions.ShardSelector,
//     shardRange(object.metadata.namespace|object.metadata.uid, '0x…', '0x…')
//     joined by ||) restricts a list or watch to the objects whose field
//     hashes (FNV-1a, 64 bits) into one of the ranges, start included and
//     end excluded, as kube-apiserver v1.37 does with
//     --feature-gates=ShardedListAndWatch=true. A sharded list carries the
//     normalized selector in metadata.shardInfo (not a list of custom
//     resources, nor a PartialObjectMetadataList: kube-apiserver echoes it
//     in neither) and no remainingItemCount; a bad selector is answered as
//     kube-apiserver answers it, 500 with "invalid shard selector: …" (a
//     CEL syntax error in words of ours: see internal/shardselector).
//     kube-apiserver's gate is off by default, which ignores the
//     parameter; [Config.NoShardedListAndWatch] does the same.
//   - Every object returned, listed or watched is a private deep copy,
//     normalised as a real client would see it after a JSON round trip
//     (times at whole seconds, empty omitempty collections as nil, …;
//     without encoding anything, see normalize.go). One exception, by
//     request: a watch consumer that never modifies what it receives
//     may call ShareObjects on the watch and then receives the stored
//     snapshots themselves (see internal/watchproto.SharingWatcher). This library's
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
// Owner references and garbage collection work across all kinds.
//
// [New] serves Pods, ReplicaSets, Deployments and Namespaces
// ([Cluster.Namespaces]): enough for a simulation of rollouts. More kinds are added with:
//
//   - [AddBuiltinKinds] (the test bench's choice): core/v1 Service,
//     ConfigMap, Secret, ServiceAccount, Event; events.k8s.io/v1 Event;
//     coordination.k8s.io/v1 Lease; policy/v1 PodDisruptionBudget; apps/v1
//     StatefulSet, DaemonSet, ControllerRevision; batch/v1 Job, CronJob;
//     core/v1 PersistentVolumeClaim, PersistentVolume, Endpoints, Node,
//     ReplicationController; autoscaling/v2 HorizontalPodAutoscaler;
//     networking.k8s.io/v1 Ingress, IngressClass, NetworkPolicy;
//     rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding,
//     ClusterRoleBinding; discovery.k8s.io/v1 EndpointSlice;
//     admissionregistration.k8s.io/v1 webhook configurations and admission
//     policies with their bindings (called with [Config.Admission]). Each with its
//     API defaults, server-set fields, generation rule, status (and, for
//     StatefulSets and ReplicationControllers, scale) subresource, guarding
//     validation, and discovery entry with short names and categories.
//     No controller runs for them, as in envtest: a StatefulSet makes no
//     pods, a Job runs nothing.
//   - [NewResource] and a [Kind] for anything else: [KindFor] derives one
//     from a Go type registered in a runtime.Scheme (your custom
//     resources, with the semantics of CRDs).
//
// A request for a resource the cluster does not serve is answered 404, as
// kube-apiserver answers it, with a message that names the resource and
// says which of these adds it; [Cluster.Serves] gives the same answer for
// a kind, for a harness that reports an informer that never syncs.
//
// # Built-in controllers
//
// Three controllers of kube-controller-manager run inside the cluster: the
// garbage collector, the namespace controller and the disruption
// controller (PodDisruptionBudget status). They act synchronously, after
// each request that gives them work and before it returns, in a fixed
// order, so their effects are deterministic and visible as soon as the
// request has returned; what they write is seen by watches like any
// write, and recorded in managedFields as the real controllers' writes
// are (see "Server-side apply"). [Config.NoGarbageCollection] turns the
// garbage collector and the namespace controller off (as in envtest,
// which runs neither); [Config.NoNamespaceController] and
// [Config.NoDisruptionController] turn one off alone.
//
// # The REST API
//
// [NewHandler] serves the cluster over the Kubernetes REST API, and
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
//     of every kind, the status subresource of kinds that have one, the
//     scale subresource (autoscaling/v1) of Deployments, ReplicaSets,
//     StatefulSets and ReplicationControllers, pods/eviction (a policy/v1
//     or v1beta1 Eviction, answered 201, 429 or 500 as kube-apiserver
//     answers) and namespaces/finalize. A delete that removes a pod or a
//     namespace answers with the object, as kube-apiserver's registries
//     do; other kinds with a Status.
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
// # Server-side apply
//
// Given the types of its kinds ([Config.TypeConverter], or one kind's
// [Kind.TypeConverter]), the cluster records metadata.managedFields and
// serves server-side apply ([types.ApplyYAMLPatchType]) with
// apimachinery's field managers, the library kube-apiserver records and
// applies with; controllerruntime/clustertest gives client-go's schemas
// for the built-in kinds and deduced types for the rest.
//
//   - Creates, updates, patches and status writes record the fields they
//     set as their manager's "Update" entry (one per manager, version and
//     subresource; beyond 10 such entries the oldest merge into
//     "ancient-changes"), as kube-apiserver records them: on the object
//     as sent and defaulted, before the kind's strategy prepares it. An
//     apply records an "Apply" entry, merges lists by their keys
//     (containers by name, ports by containerPort and protocol, …),
//     removes the fields its manager no longer applies unless another
//     manager has them too, answers 409 naming the conflicting managers
//     and fields (in details.causes) unless forced, and creates the object
//     if there is none (not through "status").
//   - A write or apply of the scale subresource is recorded as
//     kube-apiserver maps a Scale's managedFields to its parent: an entry
//     of the subresource "scale" with spec.replicas, and no time. When no
//     entry owns spec.replicas (an object applied without them, say), the
//     Scale has no managedFields: an update of it records nothing, and an
//     apply first gives the replicas to "before-first-apply", with which
//     it conflicts unless forced.
//   - The manager is the fieldManager parameter (required for an apply:
//     422), else the User-Agent up to its first '/'; for [Client], the
//     options' FieldManager, else the program's name, as client-go's
//     default User-Agent names it. [ControllerClient] writes as
//     "kube-controller-manager" (or its FieldManager), the kubelet as
//     "kubelet", as on a real cluster. The built-in controllers write as
//     kube-controller-manager: the garbage collector's removals of owner
//     references and finalizers, the namespace controller's status
//     conditions and its namespaces/finalize (an entry of the subresource
//     "finalize"), the disruption controller's budget status. What
//     kube-apiserver writes itself is recorded as it records it: the
//     namespaces a cluster starts with and an eviction's update of a
//     budget's status as "kube-apiserver"'s; the DisruptionTarget
//     condition an eviction puts on a pod, the deletionTimestamp and
//     finalizers a delete sets and a terminating namespace's phase not at
//     all (kube-apiserver writes them past its field manager).
//   - A write of a resource leaves its status out of the record, a write
//     of its status the spec, and what kube-apiserver's strategies reset
//     besides (a Deployment's labels, a pod's owner references; all but
//     the status of a custom resource).
//   - Times are the cluster's clock at whole seconds. A managedFields list
//     sent with an update replaces the record; a list of one empty entry
//     (or an empty JSON list) clears it, and an object without one records
//     nothing until its next apply. application/apply-patch+cbor is
//     answered 415, as by kube-apiserver v1.37 with its default features.
//
// Recording costs CPU on every write of a tracked kind, several times
// what an untracked write costs: the field manager types both objects
// (validating them against the schema) and compares them. The cluster
// records creates, updates and status writes with the comparison the
// field manager makes (structured-merge-diff's), but keeps what it does
// besides from one write to the next: the stored object's managedFields
// stay parsed, and the entries a write does not change stay encoded.
// Applies, the scale subresource, a request that sends managedFields of
// its own, entries of another version and an object with ten writers by
// update or more go through the field manager itself. Both give the same
// managedFields: memcluster's own tests (and the bench's, with
// CTRLKIT_CHECK_MANAGEDFIELDS=1) compute every update both ways and fail
// where they differ. What remains is most of
// the cost of a write under -race: [Config.UntrackedManagers] leaves the
// writes of the managers it names out of managedFields (for the built-in
// controllers and the kubelet, those of a rollout), and simulations at
// scale leave the converter nil. Type information is built at the first
// write of a tracked kind (with [Config.RequireNamespaces], the
// namespaces created by [New]): client-go's schemas take a few hundred
// milliseconds to parse, once per process.
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
// clock, lagging watch delivery and dropped watches:
//
//	err := c.SetFaults(memcluster.Faults{Rules: []memcluster.FaultRule{
//		{Verb: "update/status", Resource: "deployments", Rate: 0.3, Reason: metav1.StatusReasonConflict},
//	}})
//
// A rule names kube-apiserver's verb and apimachinery's reason
// ([FaultRule]); a verb it does not know is an error.
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
// Field selectors take metadata.name, metadata.namespace (namespaced
// kinds) and the request version's [CustomVersion.SelectableFields] (a
// CRD's selectableFields), anything else is 400 "field label not
// supported"; lists page with limit and continue, creates need the
// namespace (with [Config.RequireNamespaces]) and are refused in a
// terminating one, and deletion propagates (foreground, orphan) as for
// any kind. With [CustomKind.TypeConverter] (package
// controllerruntime/crd builds it from the CRD's OpenAPI schema, as
// kube-apiserver does) managedFields are recorded and server-side apply
// is served as kube-apiserver serves it for custom resources: lists of
// type map merge by their keys, sets by value, the status subresource
// resets all but the status; a write in a version other than the
// storage one (an apply too) is recorded under the request's version, by
// that version's field managers, which see the fields of every version's
// managers (the versions convert by their apiVersion, as without a
// conversion webhook). [AddCustomKind] adds one, [Tx.ServeCustom] changes it keeping its
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
// Admission: NamespaceLifecycle, and what the Priority and
// DefaultTolerationSeconds plugins do to a new pod (priority 0 and PreemptLowerPriority, or the priority of
// system-cluster-critical and system-node-critical; tolerations of
// not-ready and unreachable nodes for 300 s); a pod naming another
// priority class is stored without a priority (kube-apiserver refuses it
// unless the PriorityClass exists; memcluster serves none). Left out,
// because only controllers memcluster does not run take them away again:
// the finalizers StorageObjectInUseProtection puts on claims and volumes
// (a deleted claim goes at once, not after its pvc-protection finalizer)
// and the not-ready taint TaintNodesByCondition puts on a new Node.
// Admission webhooks and policies run with [Config.Admission], which the
// test bench (controllerruntime/clustertest) sets with kube-apiserver's
// own plugins: around every client write (creates, updates, patches,
// applies, deletes, the status, scale, eviction and finalize
// subresources), a mutating stage before the kind's strategy and
// validation and a validating stage after, never with the cluster's lock
// held; a write whose object changed meanwhile starts over, admission
// included. The built-in controllers' own writes are not admitted. See
// docs/admission.md.
// Validation is kube-apiserver's for what guards controllers (required
// fields, selectors, immutable fields, the values a controller switches
// on), not all of it (container names and ports, volumes, probes, metrics
// of HorizontalPodAutoscalers, …); an immutable-field error prints the
// apps/v1 value where kube-apiserver prints its internal type, and a
// claim's spec-change error leaves out the diff. HorizontalPodAutoscalers
// are served in autoscaling/v2 only (autoscaling/v1 answers 404). Pods'
// pod-level resources are not defaulted from the containers' and do not
// enter the QoS class.
//
// No RBAC, authentication or dry run (400): admission's requester is the
// user a REST request impersonates (the Impersonate-* headers), else its
// field manager. managedFields and
// server-side apply need type information (see "Server-side apply"): a
// kind without it records none, and an apply to it is answered 415
// saying how to give it; a kind of your Go type given deduced types (as
// the test bench gives those without a schema) applies its lists whole,
// where a CRD's schema merges them by key. A custom kind records no
// managedFields for writes of its scale subresource. A status write takes the status,
// labels and annotations of the object written (a Deployment's
// annotations only), not its other metadata (kube-apiserver takes all but
// what the kind's strategy resets); the watch history is per kind, and so
// is how far back lists at an older version and continue tokens reach
// ([Config.WatchHistory] events of the kind). A watch's timeoutSeconds is
// ignored (watches end when their client leaves, or when the cluster
// drops them). No OpenAPI, Table or aggregated discovery documents, so
// kubectl's explain and printing of columns do not work. Kinds of your Go
// types ([KindFor]) have no schema: no validation or defaulting beyond
// metadata's unless you set [Kind.Validate] and [Kind.Default], one
// version, no scale subresource; kinds without a Go type ([CustomKind])
// have what a CustomResourceDefinition gives (see Custom resources),
// except conversion webhooks, which are not called: such a kind is
// served in its storage version only, and requests in another answer 500
// saying so. Warnings of the API server's own (unknown fields dropped,
// deprecated versions) are not sent (admission's are, as Warning headers),
// and fieldValidation=Strict is not applied.
//
// The built-in controllers differ from kube-controller-manager's in when,
// not in what: they act inside the request that gives them work, not
// after their informers have caught up, so the races of the real ones
// (the garbage collector missing a dependent created just before its
// owner's deletion, say) do not happen. They run no timers: the namespace
// controller looks again when something in the namespace is written or
// removed (a pod still terminating past its grace period does not raise
// NamespaceDeletionContentFailure), the disruption controller drops an
// evicted pod that was never deleted from disruptedPods at the next
// write in the namespace rather than after two minutes, and does not
// reset its DisruptionTarget condition. A pod matched by several budgets
// updates all of them (upstream picks one). They record no Events.
//
// The [Kubelet] registers its Nodes when it is created, as a v1.37
// kubelet on Linux registers one (labels, capacity and allocatable,
// conditions, addresses, nodeInfo; see KubeletConfig.Nodes and Zones),
// and binds pods only to those that exist. The rest of a Node's life is
// not modelled: no heartbeats or Leases in kube-node-lease, no taints,
// never NotReady or unreachable, no node-pressure eviction, no
// re-registration of a deleted Node (whose pods run on: no pod garbage
// collector deletes them).
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
