package kube

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/replicaset"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// These adapters let the controllers read from client-go's shared informers
// instead of ctrlkit's. Like the listers they wrap, they return shared,
// read-only objects. A nil selector matches everything, as in ctrlkit's
// caches (client-go listers need labels.Everything()).

// DeploymentGetter adapts a client-go Deployment lister to
// deployment.DeploymentGetter.
func DeploymentGetter(l appslisters.DeploymentLister) deployment.DeploymentGetter {
	return deployment.DeploymentGetterFunc(func(key types.NamespacedName) (*appsv1.Deployment, error) {
		return l.Deployments(key.Namespace).Get(key.Name)
	})
}

// ReplicaSetGetter adapts a client-go ReplicaSet lister to
// replicaset.ReplicaSetGetter.
func ReplicaSetGetter(l appslisters.ReplicaSetLister) replicaset.ReplicaSetGetter {
	return replicaset.ReplicaSetGetterFunc(func(key types.NamespacedName) (*appsv1.ReplicaSet, error) {
		return l.ReplicaSets(key.Namespace).Get(key.Name)
	})
}

// ReplicaSetLister adapts a client-go ReplicaSet lister to the
// ReplicaSetLister interfaces of both deployment and replicaset (they have
// the same method). Namespace "" lists every namespace.
func ReplicaSetLister(l appslisters.ReplicaSetLister) deployment.ReplicaSetListerFunc {
	return func(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
		return l.ReplicaSets(namespace).List(orEverything(selector))
	}
}

// ReplicaSetReader combines [ReplicaSetGetter] and [ReplicaSetLister] into
// the replicaset.ReplicaSetReader a replicaset.Reconciler reads with.
func ReplicaSetReader(l appslisters.ReplicaSetLister) replicaset.ReplicaSetReader {
	return struct {
		replicaset.ReplicaSetGetter
		replicaset.ReplicaSetLister
	}{ReplicaSetGetter(l), replicaset.ReplicaSetListerFunc(ReplicaSetLister(l))}
}

// PodLister adapts a client-go pod lister to replicaset.PodLister.
func PodLister(l corelisters.PodLister) replicaset.PodListerFunc {
	return func(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
		return l.Pods(namespace).List(orEverything(selector))
	}
}

// PodIndexer adapts the indexer of a client-go pod informer to
// deployment.PodIndexer. The indexer must have an index named
// deployment.PodControllerIndex; add it with [AddPodControllerIndex]
// before the informer starts.
func PodIndexer(idx cache.Indexer) deployment.PodIndexer {
	return deployment.PodIndexerFunc(func(index, value string) ([]*corev1.Pod, error) {
		objs, err := idx.ByIndex(index, value)
		if err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			p, ok := o.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("kube: pod index %q holds a %T", index, o)
			}
			pods = append(pods, p)
		}
		return pods, nil
	})
}

// AddPodControllerIndex adds to a client-go pod informer the index
// [PodIndexer] serves: pods by the UID of their controller.
func AddPodControllerIndex(inf cache.SharedIndexInformer) error {
	return inf.AddIndexers(cache.Indexers{deployment.PodControllerIndex: controllerUID})
}

func controllerUID(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return []string{string(ref.UID)}, nil
		}
	}
	return nil, nil
}

func orEverything(s labels.Selector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	return s
}
