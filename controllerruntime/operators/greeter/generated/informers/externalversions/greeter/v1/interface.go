// Package v1 has the informers of greeter.ctrlkit.dev/v1.
package v1

import (
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/internalinterfaces"
)

// Interface gives the informer of each kind of the version.
type Interface interface {
	Greeters() GreeterInformer
}

type version struct {
	factory   internalinterfaces.SharedInformerFactory
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
}

// New returns the version's informers from factory.
func New(f internalinterfaces.SharedInformerFactory, namespace string, tweak internalinterfaces.TweakListOptionsFunc) Interface {
	return &version{factory: f, namespace: namespace, tweak: tweak}
}

func (v *version) Greeters() GreeterInformer {
	return &greeterInformer{factory: v.factory, namespace: v.namespace, tweak: v.tweak}
}
