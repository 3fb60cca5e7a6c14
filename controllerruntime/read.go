package controllerruntime

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Field indexes the controllers read through, registered on the
// manager's cache by the Add functions (or by [IndexFields]).
const (
	// ControllerUIDField indexes pods and ReplicaSets by the UID of their
	// controller.
	ControllerUIDField = "ctrlkit.io/controller-uid"
	// OrphanField indexes pods and ReplicaSets without a controller under
	// the value "true".
	OrphanField = "ctrlkit.io/orphan"
)

// IndexFields registers [ControllerUIDField] and [OrphanField] for pods
// and ReplicaSets with indexer (a manager's GetFieldIndexer()). It must run
// before the manager's cache starts. Indexes already registered under these
// names are kept: the Add functions call it once each.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.ReplicaSet{}} {
		for field, fn := range map[string]client.IndexerFunc{ControllerUIDField: controllerUID, OrphanField: orphan} {
			if err := indexer.IndexField(ctx, obj, field, fn); err != nil && !strings.Contains(err.Error(), "conflict") {
				return fmt.Errorf("controllerruntime: index %s of %T: %w", field, obj, err)
			}
		}
	}
	return nil
}

func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

func orphan(o client.Object) []string {
	if metav1.GetControllerOfNoCopy(o) == nil {
		return []string{"true"}
	}
	return nil
}

// reader reads objects of type T (a struct such as appsv1.ReplicaSet) from
// a client.Reader, usually the manager's cache, through the interfaces of
// package reconcile. Lists skip the cache's deep copy: the controllers
// treat what they read as read-only.
type reader[T any, PT interface {
	*T
	client.Object
}, L client.ObjectList] struct {
	r       client.Reader
	newList func() L
	items   func(L) []T
}

func (r reader[T, PT, L]) Get(ctx context.Context, key types.NamespacedName) (PT, error) {
	obj := PT(new(T))
	if err := r.r.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (r reader[T, PT, L]) List(ctx context.Context, namespace string, selector labels.Selector) ([]PT, error) {
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	if selector != nil && !selector.Empty() {
		opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	}
	return r.list(ctx, opts...)
}

func (r reader[T, PT, L]) ListByController(ctx context.Context, namespace string, uid types.UID) ([]PT, error) {
	if uid == "" {
		return r.list(ctx, client.InNamespace(namespace), client.MatchingFields{OrphanField: "true"}, client.UnsafeDisableDeepCopy)
	}
	return r.list(ctx, client.MatchingFields{ControllerUIDField: string(uid)}, client.UnsafeDisableDeepCopy)
}

func (r reader[T, PT, L]) list(ctx context.Context, opts ...client.ListOption) ([]PT, error) {
	l := r.newList()
	if err := r.r.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	items := r.items(l)
	out := make([]PT, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out, nil
}

// Readers over c of the three kinds the controllers read.
func deploymentReader(c client.Reader) reader[appsv1.Deployment, *appsv1.Deployment, *appsv1.DeploymentList] {
	return reader[appsv1.Deployment, *appsv1.Deployment, *appsv1.DeploymentList]{r: c,
		newList: func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} },
		items:   func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }}
}

func replicaSetReader(c client.Reader) reader[appsv1.ReplicaSet, *appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return reader[appsv1.ReplicaSet, *appsv1.ReplicaSet, *appsv1.ReplicaSetList]{r: c,
		newList: func() *appsv1.ReplicaSetList { return &appsv1.ReplicaSetList{} },
		items:   func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items }}
}

func podReader(c client.Reader) reader[corev1.Pod, *corev1.Pod, *corev1.PodList] {
	return reader[corev1.Pod, *corev1.Pod, *corev1.PodList]{r: c,
		newList: func() *corev1.PodList { return &corev1.PodList{} },
		items:   func(l *corev1.PodList) []corev1.Pod { return l.Items }}
}

var (
	_ reconcile.Reader[*appsv1.ReplicaSet]       = replicaSetReader(nil)
	_ reconcile.ByController[*appsv1.ReplicaSet] = replicaSetReader(nil)
	_ reconcile.Reader[*corev1.Pod]              = podReader(nil)
	_ reconcile.ByController[*corev1.Pod]        = podReader(nil)
	_ reconcile.Reader[*appsv1.Deployment]       = deploymentReader(nil)
)
