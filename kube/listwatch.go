package kube

import (
	"context"
	"fmt"

	"github.com/ctrlkit/ctrlkit/informer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Deployments returns a ListWatcher of the Deployments in namespace ("" for
// all namespaces) for ctrlkit's informer.
func Deployments(cs kubernetes.Interface, namespace string) informer.ListWatcher[*appsv1.Deployment] {
	c := cs.AppsV1().Deployments(namespace)
	return typed(c.List, c.Watch, func(l *appsv1.DeploymentList) ([]appsv1.Deployment, string) { return l.Items, l.ResourceVersion })
}

// ReplicaSets returns a ListWatcher of the ReplicaSets in namespace ("" for
// all namespaces).
func ReplicaSets(cs kubernetes.Interface, namespace string) informer.ListWatcher[*appsv1.ReplicaSet] {
	c := cs.AppsV1().ReplicaSets(namespace)
	return typed(c.List, c.Watch, func(l *appsv1.ReplicaSetList) ([]appsv1.ReplicaSet, string) { return l.Items, l.ResourceVersion })
}

// Pods returns a ListWatcher of the pods in namespace ("" for all
// namespaces).
func Pods(cs kubernetes.Interface, namespace string) informer.ListWatcher[*corev1.Pod] {
	c := cs.CoreV1().Pods(namespace)
	return typed(c.List, c.Watch, func(l *corev1.PodList) ([]corev1.Pod, string) { return l.Items, l.ResourceVersion })
}

// typed builds a ListWatcher from the List and Watch methods of a typed
// client. Watches ask for bookmarks, so that a resumed watch starts from a
// recent resource version.
func typed[T any, PT interface {
	*T
	informer.Object
}, L any](
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	items func(L) ([]T, string),
) informer.ListWatcher[PT] {
	return informer.ListWatchFuncs[PT]{
		ListFunc: func(ctx context.Context) ([]PT, string, error) {
			l, err := list(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			objs, rv := items(l)
			out := make([]PT, len(objs))
			for i := range objs {
				out[i] = &objs[i]
			}
			return out, rv, nil
		},
		WatchFunc: func(ctx context.Context, rv string) (watch.Interface, error) {
			return watchFn(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

// FromListerWatcher adapts a client-go ListerWatcher, such as a
// *cache.ListWatch built with cache.NewListWatchFromClient, to ctrlkit's
// informer.ListWatcher. Listed items that are not a T are an error.
func FromListerWatcher[T informer.Object](lw cache.ListerWatcherWithContext) informer.ListWatcher[T] {
	return informer.ListWatchFuncs[T]{
		ListFunc: func(ctx context.Context) ([]T, string, error) {
			obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return extract[T](obj)
		},
		WatchFunc: func(ctx context.Context, rv string) (watch.Interface, error) {
			return lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

func extract[T informer.Object](list runtime.Object) ([]T, string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", fmt.Errorf("kube: list: %w", err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, "", fmt.Errorf("kube: list: %w", err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			return nil, "", fmt.Errorf("kube: list holds a %T, want %T", o, *new(T))
		}
		out = append(out, t)
	}
	return out, lm.GetResourceVersion(), nil
}
