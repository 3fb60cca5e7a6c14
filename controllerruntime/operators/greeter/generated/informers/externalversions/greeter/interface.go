// Package greeter gives the informers of the group's versions.
package greeter

import (
	v1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/internalinterfaces"
)

// Interface gives the informers of each version of the group.
type Interface interface {
	V1() v1.Interface
}

type group struct {
	factory   internalinterfaces.SharedInformerFactory
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
}

// New returns the group's informers from factory.
func New(f internalinterfaces.SharedInformerFactory, namespace string, tweak internalinterfaces.TweakListOptionsFunc) Interface {
	return &group{factory: f, namespace: namespace, tweak: tweak}
}

func (g *group) V1() v1.Interface { return v1.New(g.factory, g.namespace, g.tweak) }
