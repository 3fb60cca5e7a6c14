package v1

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/internalinterfaces"
	listers "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/listers/greeter/v1"
)

// GreeterInformer gives the shared informer of Greeters and its lister.
type GreeterInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() listers.GreeterLister
}

type greeterInformer struct {
	factory   internalinterfaces.SharedInformerFactory
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
}

// NewGreeterInformer returns an informer of the Greeters of namespace
// ("" for all), not shared: a factory's is, and should be preferred.
func NewGreeterInformer(client versioned.Interface, namespace string, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return NewFilteredGreeterInformer(client, namespace, resync, indexers, nil)
}

// NewFilteredGreeterInformer is NewGreeterInformer with lists and
// watches adjusted by tweak.
func NewFilteredGreeterInformer(client versioned.Interface, namespace string, resync time.Duration, indexers cache.Indexers, tweak internalinterfaces.TweakListOptionsFunc) cache.SharedIndexInformer {
	opts := func(o *metav1.ListOptions) {
		if tweak != nil {
			tweak(o)
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			opts(&o)
			return client.GreeterV1().Greeters(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			opts(&o)
			return client.GreeterV1().Greeters(namespace).Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(lw, &greeterv1.Greeter{}, resync, indexers)
}

func (i *greeterInformer) defaultInformer(client versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
	return NewFilteredGreeterInformer(client, i.namespace, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, i.tweak)
}

func (i *greeterInformer) Informer() cache.SharedIndexInformer {
	return i.factory.InformerFor(&greeterv1.Greeter{}, i.defaultInformer)
}

func (i *greeterInformer) Lister() listers.GreeterLister {
	return listers.NewGreeterLister(i.Informer().GetIndexer())
}
