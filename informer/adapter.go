package informer

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// GetterFunc adapts a function to the one-method getter interfaces that
// controller packages declare, such as
//
//	type ReplicaSetGetter interface {
//		Get(key types.NamespacedName) (*appsv1.ReplicaSet, error)
//	}
//
// A [Cache] satisfies such interfaces directly; GetterFunc is for other
// sources, for example a client-go lister:
//
//	informer.GetterFunc[*appsv1.ReplicaSet](func(k types.NamespacedName) (*appsv1.ReplicaSet, error) {
//		return rsLister.ReplicaSets(k.Namespace).Get(k.Name)
//	})
type GetterFunc[T Object] func(key types.NamespacedName) (T, error)

// Get calls f(key).
func (f GetterFunc[T]) Get(key types.NamespacedName) (T, error) { return f(key) }

// ListerFunc adapts a function to the one-method lister interfaces that
// controller packages declare, such as
//
//	type PodLister interface {
//		List(namespace string, selector labels.Selector) ([]*corev1.Pod, error)
//	}
//
// A [Cache] satisfies such interfaces directly; ListerFunc is for other
// sources, for example a client-go lister (whose Pods("") lists every
// namespace, matching the convention here):
//
//	informer.ListerFunc[*corev1.Pod](func(ns string, sel labels.Selector) ([]*corev1.Pod, error) {
//		return podLister.Pods(ns).List(sel)
//	})
type ListerFunc[T Object] func(namespace string, selector labels.Selector) ([]T, error)

// List calls f(namespace, selector).
func (f ListerFunc[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	return f(namespace, selector)
}
