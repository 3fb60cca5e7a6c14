package cluster

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// EnsureServiceAccount creates the ServiceAccount "default" of namespace
// ns unless it exists. kube-apiserver's ServiceAccount admission refuses
// every pod of a namespace without it; kube-controller-manager's
// serviceaccount-controller creates it on a real cluster.
func EnsureServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// serviceAccounts plays kube-controller-manager's serviceaccount
// controller for the whole control plane: it watches namespaces and
// creates the "default" ServiceAccount in each, so that every suite's
// pods pass ServiceAccount admission. (Pods created before it gets there
// are covered by the admission plugin itself, which waits up to about a
// second for the default ServiceAccount.) It stops when ctx is done and
// the returned wait returns then.
func serviceAccounts(ctx context.Context, cs kubernetes.Interface) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		done := map[string]bool{}
		for ctx.Err() == nil {
			list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				pause(ctx, 200*time.Millisecond) // the API server restarts, say
				continue
			}
			for _, ns := range list.Items {
				ensure(ctx, cs, &ns, done)
			}
			w, err := cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				pause(ctx, 200*time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if ns, ok := ev.Object.(*corev1.Namespace); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					ensure(ctx, cs, ns, done)
				}
			}
			w.Stop()
		}
	})
	return wg.Wait
}

func ensure(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, done map[string]bool) {
	if done[ns.Name] || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return
	}
	if err := EnsureServiceAccount(ctx, cs, ns.Name); err == nil || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		done[ns.Name] = true // made, or the namespace is going away
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
