package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/internal/shardselector"

	"context"
	"encoding/json"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Resource is the storage of one kind. Objects are stored as immutable
// snapshots: every write stores a new object, and every read returns a
// deep copy the caller owns.
type Resource[T Object] struct {
	c        *Cluster
	kind     Kind[T]
	objs     map[types.NamespacedName]T // guarded by c.mu
	hist     history[T]                 // guarded by c.mu
	watchers []*watcher[T]              // guarded by c.mu, in creation order
	norm     *normalizer                // nil: every round trip goes through JSON
	gcPolicy gcPolicy                   // the default propagation of deletes
	fields   fieldSelection[T]          // how field selectors are answered
	track    tracker                    // guarded by c.mu; see managedfields.go
	// decoded caches the parsed managedFields of stored objects; guarded
	// by c.mu, see managedfields_fast.go.
	decoded map[types.NamespacedName]decodedFields
	// versionTracks are the field managers of a custom kind's other
	// versions, by version; guarded by c.mu.
	versionTracks map[string]*tracker
}

// NewResource adds a kind to the cluster and returns its storage. Adding a
// kind twice is a programming error and panics. What kube-apiserver's
// registry for the kind's group, version and kind does beyond the [Kind]'s
// hooks comes from tables, so the kinds of k8s.io/api get it wherever they
// are added: the fields field selectors name (unless
// [Kind.SelectableFields] is set) and the default propagation of deletes
// (Orphan for batch/v1 Jobs, none for Events).
func NewResource[T Object](c *Cluster, k Kind[T]) *Resource[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := newResourceLocked(c, k)
	if err != nil {
		panic(err.Error())
	}
	return r
}

// newResourceLocked adds a kind; a kind already there is an error.
func newResourceLocked[T Object](c *Cluster, k Kind[T]) (*Resource[T], error) {
	gk := k.groupKind()
	if _, dup := c.kinds[gk]; dup {
		return nil, fmt.Errorf("memcluster: kind %s added twice", gk)
	}
	r := &Resource[T]{
		c:    c,
		kind: k,
		objs: map[types.NamespacedName]T{},
	}
	r.hist.limit = c.cfg.WatchHistory
	r.norm = newNormalizer(func() any { return k.New() })
	r.gcPolicy = defaultGCPolicies[k.GVK]
	r.fields = newFieldSelection(k)
	c.kinds[gk] = r
	c.order = append(c.order, r)
	c.kindsChanged++
	return r, nil
}

// Namespace returns a client for the objects of namespace. For List and
// Watch "" means every namespace; for Create it means the object's own
// namespace, or "default".
func (r *Resource[T]) Namespace(namespace string) Client[T] {
	return Client[T]{r: r, ns: namespace}
}

// Client reads and writes one kind in one namespace. Its methods mirror
// client-go's typed clients (context first, options last), except that
// List returns the items and the list's resourceVersion instead of a
// typed List object. Every returned object is a deep copy.
type Client[T Object] struct {
	r  *Resource[T]
	ns string
	// version is the served version a custom kind's REST view reads in
	// (its field selectors are that version's); "" is the storage one.
	version string
}

// Get returns the object called name.
func (cl Client[T]) Get(ctx context.Context, name string, _ metav1.GetOptions) (T, error) {
	var zero T
	c := cl.r.c
	after, err := c.admit(ctx, gate.VerbGet, cl.r.kind.groupResource(), cl.ns, name)
	if err != nil {
		return zero, err
	}
	c.mu.Lock()
	obj, ok := cl.r.objs[cl.key(cl.ns, name)]
	c.mu.Unlock()
	if !ok {
		return zero, apierrors.NewNotFound(cl.r.kind.groupResource(), name)
	}
	if after != nil {
		return zero, after
	}
	return deepCopy(obj), nil
}

// List returns every object that matches opts.LabelSelector and
// opts.FieldSelector (the fields kube-apiserver selects on for the kind),
// sorted by namespace and name, with the list's resourceVersion. It
// ignores opts.Limit (use [Client.ListPage] to paginate) but honours
// opts.Continue: the rest of a paginated list.
func (cl Client[T]) List(ctx context.Context, opts metav1.ListOptions) ([]T, string, error) {
	opts.Limit = 0
	items, meta, err := cl.ListPage(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	return items, meta.ResourceVersion, nil
}

// Create stores a new object. The server sets uid, creationTimestamp,
// generation 1 and the resourceVersion, resets the status, fills
// metadata.name from generateName, applies defaults and validates. On a
// tracked kind (see [Config.TypeConverter]) it records the fields set as
// managed by opts.FieldManager; an empty one is the program's name, as
// kube-apiserver names a client-go client that sets none (from its
// default User-Agent).
func (cl Client[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	var zero T
	c := cl.r.c
	if isNil(obj) {
		return zero, apierrors.NewBadRequest("memcluster: create of a nil object")
	}
	if errs := metav1validation.ValidateCreateOptions(&opts); len(errs) > 0 {
		return zero, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)
	}
	after, err := c.admit(ctx, gate.VerbCreate, cl.r.kind.groupResource(), cl.namespaceOf(obj), obj.GetName())
	if err != nil {
		return zero, err
	}
	var out T
	if c.admitting() {
		out, err = cl.createAdmitted(ctx, obj, opts, nil)
	} else {
		c.mu.Lock()
		out, err = cl.r.createLocked(obj, cl.ns, managerOf(opts.FieldManager))
		c.mu.Unlock()
	}
	if err != nil {
		return zero, err
	}
	if after != nil {
		return zero, after
	}
	return out, nil
}

// Update replaces the object's metadata and spec; its status is kept. A
// non-empty resourceVersion that is not the stored one fails with
// Conflict; an empty one updates unconditionally, as the apiserver allows
// for these kinds. An update that changes nothing writes nothing. The
// field manager is opts.FieldManager, as for [Client.Create].
func (cl Client[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	a := managerOf(opts.FieldManager)
	return cl.replace(ctx, gate.VerbUpdate, obj, opts, "", a.manager, func(in T) (T, error) { return cl.r.updateLocked(in, a) })
}

// UpdateStatus replaces the object's status and nothing else, with the
// same resourceVersion check and field manager as [Client.Update].
func (cl Client[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	a := managerOf(opts.FieldManager)
	return cl.replace(ctx, gate.VerbUpdateStatus, obj, opts, "status", a.manager, func(in T) (T, error) { return cl.r.updateStatusLocked(in, a) })
}

// replace runs one replace-style write: admission (fault injection), the
// JSON round trip every stored object goes through, then write under the
// cluster lock. A fault injected after the write is returned instead of
// the result, as a lost response would be. sub is the subresource
// written ("", "status", "scale") and manager the field manager, for
// admission.
func (cl Client[T]) replace(ctx context.Context, verb gate.Verb, obj T, opts metav1.UpdateOptions, sub, manager string, write func(T) (T, error)) (T, error) {
	var zero T
	c := cl.r.c
	if isNil(obj) {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("memcluster: %s of a nil object", verb))
	}
	if errs := metav1validation.ValidateUpdateOptions(&opts); len(errs) > 0 {
		return zero, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "UpdateOptions"}, "", errs)
	}
	after, err := c.admit(ctx, verb, cl.r.kind.groupResource(), cl.namespaceOf(obj), obj.GetName())
	if err != nil {
		return zero, err
	}
	in, err := cl.r.roundTrip(obj)
	if err != nil {
		return zero, err
	}
	var out T
	if c.admitting() {
		out, err = cl.replaceAdmitted(ctx, cl.withNamespace(in), sub, opts, manager, write)
	} else {
		c.mu.Lock()
		out, err = write(cl.withNamespace(in))
		c.mu.Unlock()
	}
	if err != nil {
		return zero, err
	}
	if after != nil {
		return zero, after
	}
	return out, nil
}

// Watch streams changes after opts.ResourceVersion; see [Resource] and the
// package documentation for the guarantees.
func (cl Client[T]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if _, err := cl.r.c.admit(ctx, gate.VerbWatch, cl.r.kind.groupResource(), cl.ns, ""); err != nil {
		return nil, err
	}
	match, _, err := cl.matcher(opts)
	if err != nil {
		return nil, err
	}
	return cl.r.watch(ctx, opts.ResourceVersion, opts.AllowWatchBookmarks, match)
}

// ListWatcher returns the List/Watch pair an informer consumes. It
// structurally satisfies informer.ListWatcher[T]: its Watch allows
// bookmarks.
func (cl Client[T]) ListWatcher() ListWatcher[T] { return ListWatcher[T]{cl: cl} }

// ListWatcher lists and watches every object of one client's namespace.
type ListWatcher[T Object] struct{ cl Client[T] }

// Clock returns the cluster's clock: an informer on this ListWatcher
// runs on it unless configured otherwise (informer.Config.Clock).
func (lw ListWatcher[T]) Clock() clock.Clock { return lw.cl.r.c.clock }

// List lists every object of the namespace.
func (lw ListWatcher[T]) List(ctx context.Context) ([]T, string, error) {
	return lw.cl.List(ctx, metav1.ListOptions{})
}

// Watch watches the namespace from resourceVersion, with bookmarks.
func (lw ListWatcher[T]) Watch(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	return lw.cl.Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true})
}

func (cl Client[T]) key(ns, name string) types.NamespacedName {
	if cl.r.kind.ClusterScoped {
		ns = ""
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}

// withNamespace fills in the client's namespace when the object has none.
func (cl Client[T]) withNamespace(obj T) T {
	if obj.GetNamespace() == "" && !cl.r.kind.ClusterScoped {
		obj.SetNamespace(cl.ns)
	}
	return obj
}

// matcher is what a list or watch with opts selects: its label, field
// and shard selectors (the shard selector as well on its own, nil without
// one, for the list's metadata).
func (cl Client[T]) matcher(opts metav1.ListOptions) (func(T) bool, *shardselector.Filter, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid label selector %q: %v", opts.LabelSelector, err))
	}
	fsel := cl.r.fields
	if cl.r.kind.customFields != nil {
		fsel = cl.r.kind.customFields(cl.version)
	}
	fs, err := fsel.selector(opts.FieldSelector)
	if err != nil {
		return nil, nil, err
	}
	shard, err := shardselector.ForRequest(opts.ShardSelector, !cl.r.c.cfg.NoShardedListAndWatch)
	if err != nil {
		return nil, nil, err
	}
	selectable := fsel.fields
	ns := cl.ns
	if cl.r.kind.ClusterScoped {
		ns = ""
	}
	return func(obj T) bool {
		if ns != "" && obj.GetNamespace() != ns {
			return false
		}
		if !ls.Matches(labels.Set(obj.GetLabels())) || !shard.Matches(obj) {
			return false
		}
		if fs.Empty() {
			return true // every watch event is matched: no map for nothing
		}
		return fs.Matches(selectable(obj))
	}, shard, nil
}

// roundTrip returns a JSON round-tripped copy of obj, as a real client and
// server would see it: empty collections become nil, times lose their
// sub-second part, the TypeMeta is cleared. The normalizer gives the same
// result without encoding; what it cannot do goes through JSON.
func (r *Resource[T]) roundTrip(obj T) (T, error) {
	if r.norm.accepts(obj) {
		out := deepCopy(obj)
		if r.norm.normalize(out) == nil {
			clearTypeMeta(out)
			return out, nil
		}
	}
	return r.jsonRoundTrip(obj)
}

// jsonRoundTrip is roundTrip through encoding/json.
func (r *Resource[T]) jsonRoundTrip(obj T) (T, error) {
	var zero T
	b, err := json.Marshal(obj)
	if err != nil {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("memcluster: encode %s: %v", r.kind.Resource, err))
	}
	out := r.kind.New()
	if err := json.Unmarshal(b, out); err != nil {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("memcluster: decode %s: %v", r.kind.Resource, err))
	}
	clearTypeMeta(out)
	return out, nil
}

// clearTypeMeta clears the apiVersion and kind of a typed object, which
// stored objects do not carry; an object without a Go type keeps them.
func clearTypeMeta(obj runtime.Object) {
	if _, ok := obj.(runtime.Unstructured); !ok {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
}

// semanticallyEqual reports whether a stored object and a private one
// (that nothing else refers to yet) differ only in their resourceVersion.
// It sets the private one's resourceVersion for the comparison, rather
// than copying it, and restores it.
func semanticallyEqual[T Object](stored, private T) bool {
	rv := private.GetResourceVersion()
	private.SetResourceVersion(stored.GetResourceVersion())
	eq := apiequality.Semantic.DeepEqual(stored, private)
	private.SetResourceVersion(rv)
	return eq
}

func deepCopy[T Object](obj T) T { return obj.DeepCopyObject().(T) }
