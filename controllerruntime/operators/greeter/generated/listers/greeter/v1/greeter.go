// Package v1 has the listers of greeter.ctrlkit.dev/v1: reads from an
// informer's cache.
package v1

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/listers"
	"k8s.io/client-go/tools/cache"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
)

// GreeterLister lists Greeters from a cache. What it returns is the
// cache's: do not modify it.
type GreeterLister interface {
	// List returns the Greeters of every namespace that selector matches.
	List(selector labels.Selector) ([]*greeterv1.Greeter, error)
	// Greeters returns the lister of namespace's Greeters.
	Greeters(namespace string) GreeterNamespaceLister
}

// GreeterNamespaceLister lists and gets the Greeters of one namespace
// from a cache.
type GreeterNamespaceLister interface {
	List(selector labels.Selector) ([]*greeterv1.Greeter, error)
	// Get returns the Greeter called name, or a NotFound error.
	Get(name string) (*greeterv1.Greeter, error)
}

type greeterLister struct {
	listers.ResourceIndexer[*greeterv1.Greeter]
}

// NewGreeterLister returns a lister of the Greeters in indexer.
func NewGreeterLister(indexer cache.Indexer) GreeterLister {
	return &greeterLister{listers.New[*greeterv1.Greeter](indexer, greeterv1.Resource("greeter"))}
}

func (l *greeterLister) Greeters(namespace string) GreeterNamespaceLister {
	return greeterNamespaceLister{listers.NewNamespaced(l.ResourceIndexer, namespace)}
}

type greeterNamespaceLister struct {
	listers.ResourceIndexer[*greeterv1.Greeter]
}
