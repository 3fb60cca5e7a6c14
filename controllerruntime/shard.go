package controllerruntime

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/watchfilter"
	"github.com/ctrlkit/ctrlkit/shard"
)

// ShardedInformers returns a cache.Options.NewInformer that restricts the
// manager's Deployment, ReplicaSet and pod informers to the namespaces of
// set: their lists and watches carry set's shardSelector (served by a
// kube-apiserver with --feature-gates=ShardedListAndWatch=true), and
// what the server sends outside set anyway (the gate off) is dropped
// before it reaches the cache. Informers of other kinds are unchanged
// (a selector on the namespace would drop every cluster-scoped object).
// Pair it with Options.Shard, which keeps the controllers to set:
//
//	set := shard.MustSet(ranges[i])
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: cache.Options{NewInformer: controllerruntime.ShardedInformers(set)}})
//	...
//	err = controllerruntime.Add(mgr, controllerruntime.Options{Shard: set})
//
// controller-runtime v0.25 has no option for a ShardSelector of its own:
// NewInformer is the hook through which the list options can be set.
func ShardedInformers(set shard.Set) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		switch obj.(type) {
		case *appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod:
			if !set.IsZero() {
				lw = shardedLW{next: toolscache.ToListerWatcherWithContext(lw), set: set}
			}
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}
}

// shardedLW adds a shard selector to a ListerWatcher's requests and drops
// the objects outside its set.
type shardedLW struct {
	next toolscache.ListerWatcherWithContext
	set  shard.Set
}

var (
	_ toolscache.ListerWatcher            = shardedLW{}
	_ toolscache.ListerWatcherWithContext = shardedLW{}
)

func (s shardedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s shardedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s shardedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.ShardSelector = s.set.Selector()
	list, err := s.next.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: sharded list: %w", err)
	}
	kept := items[:0]
	for _, it := range items {
		if s.keep(it) {
			kept = append(kept, it)
		}
	}
	if err := meta.SetList(list, kept); err != nil {
		return nil, fmt.Errorf("controllerruntime: sharded list: %w", err)
	}
	return list, nil
}

func (s shardedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.ShardSelector = s.set.Selector()
	w, err := s.next.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watchfilter.Filter(w, func(ev watch.Event) bool {
		return ev.Type == watch.Bookmark || ev.Type == watch.Error || s.keep(ev.Object)
	}), nil
}

func (s shardedLW) keep(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err != nil || s.set.ContainsNamespace(m.GetNamespace())
}
