package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// restInfo describes a kind for the REST API.
type restInfo struct {
	gvk           schema.GroupVersionKind
	resource      string
	clusterScoped bool
	status        bool // has a status subresource
	newObj        func() runtime.Object
	newList       func() runtime.Object // nil: lists are served as JSON only
	protobuf      bool                  // the Go types can be encoded as protobuf

	// Custom kinds only (the others take them from the kind):
	custom     bool   // no Go type: nothing to register in the scheme
	listKind   string // "": the kind + "List"
	singular   string // "": the kind in lower case
	shortNames []string
	categories []string
	scale      *CustomScale
	// watchEvent converts a watch event's stored object for the client.
	watchEvent func(watch.Event) watch.Event
}

func (in restInfo) listGVK() schema.GroupVersionKind {
	if in.listKind != "" {
		return in.gvk.GroupVersion().WithKind(in.listKind)
	}
	return in.gvk.GroupVersion().WithKind(in.gvk.Kind + "List")
}

// restStore is the type-erased view of a [Resource] that [NewHandler]
// serves. Every method but peek goes through the cluster's admission
// (fault injection), as the typed [Client] does.
type restStore interface {
	info() restInfo
	get(ctx context.Context, ns, name string) (runtime.Object, error)
	list(ctx context.Context, ns string, opts metav1.ListOptions) ([]runtime.Object, metav1.ListMeta, error)
	// watchList opens a watch; with opts.SendInitialEvents it returns the
	// initial events, ending with the "k8s.io/initial-events-end"
	// bookmark, to send before the watch's own.
	watchList(ctx context.Context, ns string, opts metav1.ListOptions) ([]watch.Event, watch.Interface, error)
	create(ctx context.Context, ns string, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error)
	// update and patch write an object or its subresource sub: "status",
	// or "scale" (its spec.replicas, recorded as the subresource's).
	update(ctx context.Context, ns string, obj runtime.Object, sub string, opts metav1.UpdateOptions) (runtime.Object, error)
	// patch patches an object; created tells whether an apply created it.
	patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, sub string, opts metav1.PatchOptions) (obj runtime.Object, created bool, err error)
	// remove deletes an object; it returns the object as stored after the
	// delete if it is still there (being deleted), else as it was before.
	remove(ctx context.Context, ns, name string, opts metav1.DeleteOptions) (obj runtime.Object, gone bool, err error)
	// peek reads an object without admission.
	peek(ns, name string) (runtime.Object, bool)
}

var _ restStore = (*Resource[*metav1.PartialObjectMetadata])(nil)

func (r *Resource[T]) info() restInfo {
	k := r.kind
	_, proto := any(k.New()).(runtime.ProtobufMarshaller)
	if k.NewList == nil {
		proto = false
	} else if _, ok := k.NewList().(runtime.ProtobufMarshaller); !ok {
		proto = false
	}
	return restInfo{
		protobuf:      proto,
		gvk:           k.GVK,
		resource:      k.Resource,
		clusterScoped: k.ClusterScoped,
		status:        k.CopyStatus != nil,
		newObj:        func() runtime.Object { return k.New() },
		newList:       k.NewList,
		shortNames:    k.ShortNames,
		categories:    k.Categories,
	}
}

func (r *Resource[T]) get(ctx context.Context, ns, name string) (runtime.Object, error) {
	return r.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

func (r *Resource[T]) list(ctx context.Context, ns string, opts metav1.ListOptions) ([]runtime.Object, metav1.ListMeta, error) {
	items, meta, err := r.Namespace(ns).ListPage(ctx, opts)
	if err != nil {
		return nil, meta, err
	}
	out := make([]runtime.Object, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out, meta, nil
}

func (r *Resource[T]) watchList(ctx context.Context, ns string, opts metav1.ListOptions) ([]watch.Event, watch.Interface, error) {
	return r.Namespace(ns).watchList(ctx, opts)
}

// watchList is [Resource.watchList] through cl (its namespace, and the
// version a custom kind's view reads in).
func (cl Client[T]) watchList(ctx context.Context, opts metav1.ListOptions) ([]watch.Event, watch.Interface, error) {
	r, ns := cl.r, cl.ns
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		w, err := cl.Watch(ctx, opts)
		return nil, w, err
	}
	c := r.c
	if _, err := c.admit(ctx, gate.VerbWatch, r.kind.groupResource(), ns, ""); err != nil {
		return nil, nil, err
	}
	match, err := cl.matcher(opts)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	var initial []watch.Event
	for _, obj := range r.objs {
		if match(obj) {
			initial = append(initial, watch.Event{Type: watch.Added, Object: deepCopy(obj)})
		}
	}
	rv := c.rv
	c.mu.Unlock()
	if s := opts.ResourceVersion; s != "" && s != "0" {
		want, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", s))
		}
		if want > rv {
			return nil, nil, tooLargeRV(want, rv)
		}
	}
	sortObjects(initial)
	end := r.kind.New()
	end.SetResourceVersion(formatRV(rv))
	end.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	initial = append(initial, watch.Event{Type: watch.Bookmark, Object: end})
	// From the snapshot's version on, the watch replays what happened
	// since (or answers 410 if the history lost it, and the client
	// starts over).
	w, err := r.watch(ctx, formatRV(rv), opts.AllowWatchBookmarks, match)
	if err != nil {
		return nil, nil, err
	}
	return initial, w, nil
}

func (r *Resource[T]) typed(obj runtime.Object) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, apierrors.NewBadRequest(fmt.Sprintf("memcluster: %s expects a %s, got %T", r.kind.Resource, r.kind.GVK.Kind, obj))
	}
	return t, nil
}

func (r *Resource[T]) create(ctx context.Context, ns string, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	t, err := r.typed(obj)
	if err != nil {
		return nil, err
	}
	return r.Namespace(ns).Create(ctx, t, opts)
}

func (r *Resource[T]) update(ctx context.Context, ns string, obj runtime.Object, sub string, opts metav1.UpdateOptions) (runtime.Object, error) {
	t, err := r.typed(obj)
	if err != nil {
		return nil, err
	}
	if mf := t.GetManagedFields(); mf != nil && len(mf) == 0 {
		// An empty list sent as JSON clears managedFields, as kube-apiserver
		// decodes it; its equivalent of one empty entry survives the round
		// trip every write makes (which, as a client's encoding would, drops
		// an empty list).
		t.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
	}
	cl := r.Namespace(ns)
	switch sub {
	case "status":
		return cl.UpdateStatus(ctx, t, opts)
	case "scale":
		a := managerOf(opts.FieldManager)
		a.scale = true
		return cl.replace(ctx, gate.VerbUpdate, t, opts, "scale", a.manager, func(in T) (T, error) { return r.updateLocked(in, a) })
	}
	return cl.Update(ctx, t, opts)
}

func (r *Resource[T]) patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, sub string, opts metav1.PatchOptions) (runtime.Object, bool, error) {
	return r.Namespace(ns).patch(ctx, name, pt, data, opts, sub, "", nil)
}

func (r *Resource[T]) remove(ctx context.Context, ns, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, gone, err := r.Namespace(ns).delete(ctx, name, opts)
	if err != nil {
		return nil, false, err
	}
	return out, gone, nil
}

func (r *Resource[T]) peek(ns, name string) (runtime.Object, bool) {
	key := r.Namespace(ns).key(ns, name)
	r.c.mu.Lock()
	obj, ok := r.objs[key]
	r.c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return deepCopy(obj), true
}

// tooLargeRV is kube-apiserver's answer to a resourceVersion it has not
// reached: a 504 with the ResourceVersionTooLarge cause.
func tooLargeRV(want, have uint64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, have), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// sortObjects orders events by namespace and name, as lists are.
func sortObjects(evs []watch.Event) {
	slices.SortFunc(evs, func(a, b watch.Event) int {
		ma, mb := a.Object.(metav1.Object), b.Object.(metav1.Object)
		return cmpKey(objectKey(ma), objectKey(mb))
	})
}
