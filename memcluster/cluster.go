package memcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/internal/listwait"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// Object is what the cluster stores: a pointer to an API type such as
// *corev1.Pod. It has the same method set as informer.Object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Config configures a [Cluster]. The zero value is ready to use and gives a
// cluster on the wall clock.
type Config struct {
	// Clock drives every timestamp the cluster writes, the kubelet, watch
	// lag, injected latency and periodic bookmarks. Pass a *[clock.Fake]
	// (and the same clock to your queues and informers) for virtual time;
	// [Cluster.RunUntil] needs one. Nil means [clock.Real].
	Clock clock.Clock
	// Seed seeds every random choice: generated names, UIDs, injected
	// faults and kubelet delays. Two clusters with the same seed that
	// receive the same sequence of calls behave identically.
	Seed uint64
	// WatchHistory is the number of events retained per kind for watches
	// that resume from a resourceVersion. Older versions answer 410 Gone.
	// Zero means 1000.
	WatchHistory int
	// WatchBuffer is the number of undelivered events a watcher may hold.
	// A watcher that falls further behind is terminated (its channel is
	// closed) and must watch again, as a real API server does with slow
	// watchers. Zero means 1000.
	WatchBuffer int
	// BookmarkInterval, when positive, sends a [watch.Bookmark] to every
	// watch that allows bookmarks after each interval of (virtual) time.
	// Zero means bookmarks are sent only by [Cluster.Bookmark].
	BookmarkInterval time.Duration
	// Gate, if set, orders every request, watch delivery and kubelet
	// sync. Its type is internal: this repository's bench
	// (controllerruntime/clustertest) sets it to replay a simulation
	// exactly. Nil lets them happen as their goroutines run.
	Gate gate.Gate
	// OnWrite, if set, is told about every write the cluster stores, in
	// the order of their resourceVersions, with the cluster's lock held:
	// it must be quick and must not call the cluster. The object is the
	// stored snapshot: read it, never modify it.
	OnWrite func(Write)
	// OnRequest, if set, is told about every request the cluster admits
	// (once it has passed the Gate, with the latency and error injected
	// into it) and every watch it drops, with the request's context (a
	// REST request's is its http.Request's, so a caller can tell clients
	// apart by what it put there). It may be called with the cluster's
	// lock held: it must be quick and must not call the cluster.
	OnRequest func(context.Context, Request)
	// NoGarbageCollection turns the garbage collector off: objects whose
	// owners are all gone, and dependents of a deleted object, stay until
	// deleted by hand, and an object deleted with Foreground or Orphan
	// propagation keeps its foregroundDeletion or orphan finalizer (as in
	// envtest, which runs no kube-controller-manager). It turns the
	// namespace controller off too (see NoNamespaceController).
	NoGarbageCollection bool
	// NoNamespaceController turns the namespace controller off alone: a
	// deleted namespace stays Terminating, with its content, until
	// spec.finalizers is emptied through namespaces/<name>/finalize (as
	// in envtest).
	NoNamespaceController bool
	// NoDisruptionController turns the disruption controller off: the
	// status of a PodDisruptionBudget is never computed, so evicting a pod
	// it covers answers 429 (as in envtest).
	NoDisruptionController bool
	// RequireNamespaces makes a namespaced object's namespace required,
	// as kube-apiserver's NamespaceLifecycle admission does: creating an
	// object in a namespace that does not exist answers NotFound. The
	// namespaces default, kube-system, kube-public and kube-node-lease
	// then exist from the start, as on a real cluster. Without it,
	// objects may be created in any namespace (creating one in a
	// namespace that is being deleted is refused either way).
	RequireNamespaces bool
	// TypeConverter gives the types of the cluster's kinds to
	// apimachinery's field managers: with it the cluster records
	// metadata.managedFields and serves server-side apply, as
	// kube-apiserver does (see "Server-side apply" in the package
	// documentation). A kind's [Kind.TypeConverter] takes precedence. For
	// the built-in kinds, pass k8s.io/client-go/applyconfigurations'
	// NewTypeConverter(scheme) (wrapped in [LazyTypeConverter] to parse its
	// schemas at the first write only); [TypeConverterChain] adds a
	// fallback, such as managedfields.NewDeducedTypeConverter(), for the
	// kinds it has no type for. Nil: no kind is tracked (unless its own
	// converter is set), server-side apply is answered 415, and writes cost
	// nothing more, which simulations at scale want.
	TypeConverter managedfields.TypeConverter
	// NoShardedListAndWatch makes lists and watches ignore their
	// shardSelector parameter, as kube-apiserver v1.37 does by default
	// (its ShardedListAndWatch gate is alpha and off): every object is
	// served and a list carries no metadata.shardInfo. By default the
	// cluster serves the parameter as kube-apiserver with
	// --feature-gates=ShardedListAndWatch=true does (see "Sharded lists
	// and watches" in the package documentation).
	NoShardedListAndWatch bool
	// UntrackedManagers names field managers whose creates, updates,
	// patches and status writes the cluster does not record in
	// managedFields, which saves most of a write's cost: an update by one
	// of them keeps the object's managedFields as they were (the fields it
	// changes stay with their former managers) and an object it creates
	// has none (so, as on kube-apiserver for an object without
	// managedFields, later updates of it record none either, until an
	// apply starts them). Their server-side applies are recorded as any.
	// kube-apiserver records every writer: nil (the default) is exact.
	// "kube-controller-manager" and "kubelet" are the cluster's own
	// controllers' and kubelet's writes (see [ControllerClient]).
	UntrackedManagers []string
	// Admission, if set, runs admission around every write of a client
	// (not the built-in controllers' own): a mutating stage before the
	// kind's strategy and validation, a validating stage after, as
	// kube-apiserver runs its admission webhooks and policies. Its type
	// is internal: this repository's bench (controllerruntime/clustertest)
	// sets it, with k8s.io/apiserver's admission plugins. Nil: writes are
	// admitted as before (NamespaceLifecycle and the pod defaults that
	// kube-apiserver's admission plugins set, see the package
	// documentation).
	Admission admit.Admitter
}

func (c Config) withDefaults() Config {
	if c.WatchHistory <= 0 {
		c.WatchHistory = 1000
	}
	if c.WatchBuffer <= 0 {
		c.WatchBuffer = 1000
	}
	c.Clock = clock.OrReal(c.Clock)
	return c
}

// Cluster is an in-memory Kubernetes API server for Deployments,
// ReplicaSets and Pods (and any kind added with [NewResource]). It is safe
// for concurrent use. Create it with [New].
type Cluster struct {
	cfg   Config
	clock clock.Clock

	// mu guards every store, the resourceVersion counter, the UID index,
	// the random source and the kind registry. It is never held while
	// sending on a channel that a client reads.
	mu    sync.Mutex
	rv    uint64
	rnd   *rand.Rand
	uids  map[types.UID]schema.GroupKind
	kinds map[schema.GroupKind]collector
	order []collector
	// kindsChanged counts the changes of the kinds served (kinds added or
	// removed, custom kinds changed), so the REST view knows when to
	// rebuild.
	kindsChanged uint64
	customs      map[schema.GroupResource]*customKind
	hooks        hookRunner
	kubelets     []*Kubelet
	watchSeq     uint64 // watches opened so far

	// dependents indexes owner references: the objects that refer to
	// each owner UID.
	dependents map[types.UID]map[objRef]struct{}
	// react is the work of the built-in controllers that writes cause;
	// see observeLocked.
	react reactor

	faults faultInjector
	// lists follows the writes by kind, for Faults.ListCatchUp.
	lists listwait.Tracker
	// staging, if set, captures the next commit instead of making it
	// (see admission.go); set and cleared within one hold of mu.
	staging *staged

	pods        *Resource[*corev1.Pod]
	replicaSets *Resource[*appsv1.ReplicaSet]
	deployments *Resource[*appsv1.Deployment]
	namespaces  *Resource[*corev1.Namespace]
}

// New returns an empty cluster. It starts no goroutine: watches and
// kubelets start their own, and stop with their context.
func New(cfg Config) *Cluster {
	cfg = cfg.withDefaults()
	c := &Cluster{
		cfg:   cfg,
		clock: cfg.Clock,
		rv:    1, // as a fresh etcd's revision: a list never answers "0", and the first write is 2
		rnd:   rand.New(rand.NewPCG(cfg.Seed, 0x6d656d636c757374)),
		uids:  map[types.UID]schema.GroupKind{},
		kinds: map[schema.GroupKind]collector{},

		customs:    map[schema.GroupResource]*customKind{},
		dependents: map[types.UID]map[objRef]struct{}{},
	}
	c.faults.init(cfg.Seed)
	c.pods = NewResource(c, podKind())
	c.replicaSets = NewResource(c, replicaSetKind())
	c.deployments = NewResource(c, deploymentKind())
	c.namespaces = NewResource(c, namespaceKind())
	if cfg.RequireNamespaces {
		c.createInitialNamespaces()
	}
	return c
}

// Clock returns the clock the cluster runs on.
func (c *Cluster) Clock() clock.Clock { return c.clock }

// Pods returns a client for the pods of namespace; "" means every
// namespace for List and Watch, and the object's own namespace for Create.
func (c *Cluster) Pods(namespace string) Client[*corev1.Pod] { return c.pods.Namespace(namespace) }

// Namespaces returns a client for the namespaces. Namespaces have
// kube-apiserver's lifecycle (see the package documentation): use
// the REST API ([NewHandler]) for namespaces/<name>/finalize.
func (c *Cluster) Namespaces() Client[*corev1.Namespace] { return c.namespaces.Namespace("") }

// ReplicaSets returns a client for the ReplicaSets of namespace; see [Cluster.Pods].
func (c *Cluster) ReplicaSets(namespace string) Client[*appsv1.ReplicaSet] {
	return c.replicaSets.Namespace(namespace)
}

// Deployments returns a client for the Deployments of namespace; see [Cluster.Pods].
func (c *Cluster) Deployments(namespace string) Client[*appsv1.Deployment] {
	return c.deployments.Namespace(namespace)
}

// ResourceVersion returns the cluster-wide resourceVersion: the version of
// the latest write to any kind, or "1" for a fresh cluster (as a fresh
// etcd: a list never answers "0").
func (c *Cluster) ResourceVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return formatRV(c.rv)
}

// Bookmark sends a [watch.Bookmark] carrying the current resourceVersion to
// every open watch that allows bookmarks.
func (c *Cluster) Bookmark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.order {
		k.bookmarkLocked(c.rv)
	}
}

// nextRVLocked allocates the next resourceVersion.
func (c *Cluster) nextRVLocked() uint64 {
	c.rv++
	return c.rv
}

// nowLocked is the server time as stored in objects: metav1.Time keeps
// whole seconds once serialised, so the cluster stores whole seconds too.
func (c *Cluster) now() metav1.Time {
	return metav1.NewTime(c.clock.Now().Truncate(time.Second))
}

// newUIDLocked returns a random (seeded) version-4 UUID.
func (c *Cluster) newUIDLocked() types.UID {
	var b [16]byte
	for i := range b {
		b[i] = byte(c.rnd.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// nameSuffixLocked returns the 5-character random suffix used by
// generateName, drawn from the apiserver's alphabet (no vowels, no
// look-alike digits).
func (c *Cluster) nameSuffixLocked() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[c.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// podWrittenLocked tells the kubelets about a write of the pod at key.
func (c *Cluster) podWrittenLocked(key types.NamespacedName) {
	for _, k := range c.kubelets {
		k.podWrittenLocked(key)
	}
}

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }
