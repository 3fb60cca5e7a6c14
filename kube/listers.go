package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Index names [FromInformer] adds to a client-go informer.
const (
	// ControllerUIDIndex files objects by the UID of their controller.
	ControllerUIDIndex = "ctrlkit.io/controller-uid"
	// OrphanIndex files objects without a controller by namespace.
	OrphanIndex = "ctrlkit.io/orphans"
)

// InformerReader reads the store of a client-go shared informer through
// the interfaces of package reconcile: it is a reconcile.Reader and a
// reconcile.ByController of T (a pointer API type such as *corev1.Pod).
// Like the store, it returns shared, read-only objects. Create it with
// [FromInformer].
type InformerReader[T informer.Object] struct {
	idx      cache.Indexer
	resource schema.GroupResource
}

// FromInformer returns an [InformerReader] over inf, adding
// [ControllerUIDIndex] and [OrphanIndex] to it unless they are there.
// Call it before the informer starts (client-go refuses new indexers on a
// started informer unless they are already present).
func FromInformer[T informer.Object](inf cache.SharedIndexInformer, resource schema.GroupResource) (*InformerReader[T], error) {
	if inf == nil {
		return nil, fmt.Errorf("kube: FromInformer: nil informer")
	}
	want := cache.Indexers{}
	have := inf.GetIndexer().GetIndexers()
	if _, ok := have[ControllerUIDIndex]; !ok {
		want[ControllerUIDIndex] = controllerUID
	}
	if _, ok := have[OrphanIndex]; !ok {
		want[OrphanIndex] = orphanNamespace
	}
	if len(want) > 0 {
		if err := inf.AddIndexers(want); err != nil {
			return nil, fmt.Errorf("kube: FromInformer(%s): %w", resource, err)
		}
	}
	return &InformerReader[T]{idx: inf.GetIndexer(), resource: resource}, nil
}

// Get returns the stored object at key, or a NotFound error.
func (r *InformerReader[T]) Get(_ context.Context, key types.NamespacedName) (T, error) {
	var zero T
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	obj, ok, err := r.idx.GetByKey(k)
	switch {
	case err != nil:
		return zero, err
	case !ok:
		return zero, apierrors.NewNotFound(r.resource, key.Name)
	}
	return storeObject[T](obj)
}

// List lists the stored objects of namespace ("" for all) whose labels
// match selector (nil matches everything).
func (r *InformerReader[T]) List(_ context.Context, namespace string, selector labels.Selector) ([]T, error) {
	var out []T
	var err error
	add := func(obj any) {
		if err != nil {
			return
		}
		var t T
		if t, err = storeObject[T](obj); err == nil {
			out = append(out, t)
		}
	}
	sel := orEverything(selector)
	if namespace == "" {
		err = cache.ListAll(r.idx, sel, add)
	} else if lerr := cache.ListAllByNamespace(r.idx, namespace, sel, add); lerr != nil {
		return nil, lerr
	}
	return out, err
}

// ListByController lists the stored objects controlled by uid (any
// namespace), or with an empty uid the orphans of namespace.
func (r *InformerReader[T]) ListByController(_ context.Context, namespace string, uid types.UID) ([]T, error) {
	index, value := ControllerUIDIndex, string(uid)
	if uid == "" {
		index, value = OrphanIndex, namespace
	}
	objs, err := r.idx.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, err := storeObject[T](o)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func storeObject[T informer.Object](obj any) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("kube: informer store holds a %T, want %T", obj, zero)
	}
	return t, nil
}

func controllerUID(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil || m == nil {
		return nil, err
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func orphanNamespace(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil || m == nil {
		return nil, err
	}
	if metav1.GetControllerOfNoCopy(m) == nil {
		return []string{m.GetNamespace()}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return nil, nil
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("kube: %T has no object metadata", obj)
	}
	return m, nil
}

func orEverything(s labels.Selector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	return s
}

var (
	_ reconcile.Reader[*metav1.PartialObjectMetadata]       = (*InformerReader[*metav1.PartialObjectMetadata])(nil)
	_ reconcile.ByController[*metav1.PartialObjectMetadata] = (*InformerReader[*metav1.PartialObjectMetadata])(nil)
)
