// Package internalinterfaces has what the informers of each group
// version need from the factory that shares them.
package internalinterfaces

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
)

// NewInformerFunc builds the informer of one kind.
type NewInformerFunc func(versioned.Interface, time.Duration) cache.SharedIndexInformer

// SharedInformerFactory gives one shared informer per kind.
type SharedInformerFactory interface {
	Start(stopCh <-chan struct{})
	InformerFor(obj runtime.Object, newFunc NewInformerFunc) cache.SharedIndexInformer
}

// TweakListOptionsFunc adjusts the options of an informer's lists and
// watches.
type TweakListOptionsFunc func(*metav1.ListOptions)
