package clustertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kinds follows what the caches of the bench's Managers are asked for, to
// say which kind a controller waits on: a kind the cluster does not serve
// (controller-runtime retries it every 10 s, then stops the Manager with
// "timed out waiting for cache to be synced" after two minutes, without
// saying why), an informer that does not sync, reads waiting for one.
type kinds struct {
	mu    sync.Mutex
	kinds map[string]*kindState // by type: "*v1.StatefulSet"
}

type kindState struct {
	err     error // the last error of GetInformer, cleared by a success
	getting int   // GetInformer calls in progress
	reads   int   // Get and List calls in progress
	infs    []cache.Informer
}

func (k *kinds) state(name string) *kindState {
	if k.kinds == nil {
		k.kinds = map[string]*kindState{}
	}
	st := k.kinds[name]
	if st == nil {
		st = &kindState{}
		k.kinds[name] = st
	}
	return st
}

// newCache wraps next (nil: cache.New) so that its caches report to k.
func (k *kinds) newCache(next cache.NewCacheFunc) cache.NewCacheFunc {
	if next == nil {
		next = cache.New
	}
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := next(cfg, opts)
		if err != nil {
			return nil, err
		}
		return watchedCache{Cache: c, k: k}, nil
	}
}

// typeName names the type of obj as controller-runtime's kind sources do:
// "*v1.StatefulSet", or "*unstructured.Unstructured[apps/v1 StatefulSet]".
func typeName(obj runtime.Object) string {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		gvk := obj.GetObjectKind().GroupVersionKind()
		return fmt.Sprintf("%T[%s %s]", obj, gvk.GroupVersion(), gvk.Kind)
	}
	return fmt.Sprintf("%T", obj)
}

type watchedCache struct {
	cache.Cache
	k *kinds
}

func (w watchedCache) begin(name string, f func(*kindState)) {
	w.k.mu.Lock()
	defer w.k.mu.Unlock()
	f(w.k.state(name))
}

func (w watchedCache) got(name string, inf cache.Informer, err error) {
	w.begin(name, func(st *kindState) {
		st.getting--
		st.err = err
		if err == nil && inf != nil && !slices.Contains(st.infs, inf) {
			st.infs = append(st.infs, inf)
		}
	})
}

func (w watchedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	name := typeName(obj)
	w.begin(name, func(st *kindState) { st.getting++ })
	inf, err := w.Cache.GetInformer(ctx, obj, opts...)
	w.got(name, inf, err)
	return inf, err
}

func (w watchedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	name := gvk.String()
	w.begin(name, func(st *kindState) { st.getting++ })
	inf, err := w.Cache.GetInformerForKind(ctx, gvk, opts...)
	w.got(name, inf, err)
	return inf, err
}

func (w watchedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	name := typeName(obj)
	w.begin(name, func(st *kindState) { st.reads++ })
	err := w.Cache.Get(ctx, key, obj, opts...)
	w.read(name, err)
	return err
}

func (w watchedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	name := strings.TrimSuffix(typeName(list), "List")
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		gvk := u.GroupVersionKind()
		name = fmt.Sprintf("*unstructured.Unstructured[%s %s]", gvk.GroupVersion(), strings.TrimSuffix(gvk.Kind, "List"))
	}
	w.begin(name, func(st *kindState) { st.reads++ })
	err := w.Cache.List(ctx, list, opts...)
	w.read(name, err)
	return err
}

// read ends a read of kind name: a read the cache refuses for its kind (a
// kind not served, not in the scheme) tells what a reconciler waits on.
func (w watchedCache) read(name string, err error) {
	var noMatch *meta.NoKindMatchError
	kindErr := errors.As(err, &noMatch) || runtime.IsNotRegisteredError(err)
	w.begin(name, func(st *kindState) {
		st.reads--
		if kindErr {
			st.err = err
		}
	})
}

// describe says which kinds the caches wait on, one line each.
func (k *kinds) describe() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(k.kinds)) {
		st := k.kinds[name]
		var line string
		var noMatch *meta.NoKindMatchError
		switch {
		case errors.As(st.err, &noMatch):
			line = fmt.Sprintf("kind source %s not served by the bench: %v (add the kind: Options.Types, Options.Kinds)", name, st.err)
		case runtime.IsNotRegisteredError(st.err):
			line = fmt.Sprintf("kind source %s not registered in the manager's scheme: %v", name, st.err)
		case st.err != nil:
			line = fmt.Sprintf("kind source %s: the cache cannot make its informer: %v", name, st.err)
		case st.getting > 0:
			line = fmt.Sprintf("cache of %s waiting for its informer to sync", name)
		default:
			for _, inf := range st.infs {
				if !inf.HasSynced() {
					line = fmt.Sprintf("cache of %s not synced (its list or watch keeps failing?)", name)
					break
				}
			}
		}
		if line == "" {
			continue
		}
		if st.reads > 0 {
			line += fmt.Sprintf("; %d reads of it waiting", st.reads)
		}
		out = append(out, line)
	}
	return out
}
