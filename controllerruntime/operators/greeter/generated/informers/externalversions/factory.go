// Package externalversions is the shared informer factory of the
// Greeter API group.
package externalversions

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/greeter"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/internalinterfaces"
)

// SharedInformerFactory gives the informers of the API group, one per
// kind, shared by whoever asks for it.
type SharedInformerFactory interface {
	internalinterfaces.SharedInformerFactory
	// WaitForCacheSync waits until every started informer has synced,
	// or stopCh is closed, and says which did.
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	// Shutdown waits for every started informer to stop (close the stop
	// channel given to Start first).
	Shutdown()
	Greeter() greeter.Interface
}

type sharedInformerFactory struct {
	client        versioned.Interface
	namespace     string
	tweak         internalinterfaces.TweakListOptionsFunc
	defaultResync time.Duration

	mu       sync.Mutex
	informer map[reflect.Type]cache.SharedIndexInformer
	started  map[reflect.Type]bool
	wg       sync.WaitGroup
	shutdown bool
}

// NewSharedInformerFactory returns a factory of informers of every
// namespace, resyncing every defaultResync (0: never).
func NewSharedInformerFactory(client versioned.Interface, defaultResync time.Duration) SharedInformerFactory {
	return &sharedInformerFactory{client: client, defaultResync: defaultResync,
		informer: map[reflect.Type]cache.SharedIndexInformer{}, started: map[reflect.Type]bool{}}
}

// NewFilteredSharedInformerFactory returns a factory of informers of one
// namespace ("" for all) whose lists and watches tweak adjusts.
func NewFilteredSharedInformerFactory(client versioned.Interface, defaultResync time.Duration, namespace string, tweak internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	f := NewSharedInformerFactory(client, defaultResync).(*sharedInformerFactory)
	f.namespace, f.tweak = namespace, tweak
	return f
}

func (f *sharedInformerFactory) Start(stopCh <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	for t, inf := range f.informer {
		if f.started[t] {
			continue
		}
		f.started[t] = true
		f.wg.Go(func() { inf.Run(stopCh) })
	}
}

func (f *sharedInformerFactory) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *sharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	f.mu.Lock()
	started := map[reflect.Type]cache.SharedIndexInformer{}
	for t, inf := range f.informer {
		if f.started[t] {
			started[t] = inf
		}
	}
	f.mu.Unlock()
	synced := map[reflect.Type]bool{}
	for t, inf := range started {
		synced[t] = cache.WaitForCacheSync(stopCh, inf.HasSynced)
	}
	return synced
}

func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := reflect.TypeOf(obj)
	if inf, ok := f.informer[t]; ok {
		return inf
	}
	inf := newFunc(f.client, f.defaultResync)
	f.informer[t] = inf
	return inf
}

func (f *sharedInformerFactory) Greeter() greeter.Interface {
	return greeter.New(f, f.namespace, f.tweak)
}
