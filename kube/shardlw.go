package kube

import (
	"context"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/watchfilter"
	"github.com/ctrlkit/ctrlkit/shard"
)

// SelectorMode says how the informers of a sharded Operator keep to their
// ranges.
type SelectorMode string

// The selector modes.
const (
	// SelectorAuto sends the ranges as metav1.ListOptions.ShardSelector
	// and drops, on the client, whatever the server sends outside them: a
	// kube-apiserver with the ShardedListAndWatch gate on (alpha in v1.36
	// and v1.37) sends only the ranges' objects, one without sends all.
	SelectorAuto SelectorMode = "auto"
	// SelectorClient sends no shardSelector: every member lists and
	// watches every object and drops the others' on the client (each
	// member then receives every event).
	SelectorClient SelectorMode = "client"
)

// rangeFilter restricts lists and watches to a set of hash ranges of
// namespaces: by shardSelector on the server (unless in client mode) and
// always on the client.
type rangeFilter struct {
	set      shard.Set // the zero Set keeps everything
	selector string    // sent to the server; "" in client mode
	stats    *watchStats
	fan      *fanouts // client mode: the member's shared informers
}

func newRangeFilter(set shard.Set, mode SelectorMode, stats *watchStats) *rangeFilter {
	f := &rangeFilter{set: set, stats: stats}
	if mode != SelectorClient {
		f.selector = set.Selector()
	}
	return f
}

// keep reports whether an object of namespace ns is in the ranges.
func (f *rangeFilter) keep(ns string) bool {
	return f == nil || f.set.IsZero() || f.set.ContainsNamespace(ns)
}

// watchStats counts what a member's informers received and dropped, per
// resource, and whether the server filtered their last lists.
type watchStats struct {
	received, dropped [3]atomic.Int64 // by resource index
	serverSide        [3]atomic.Int32 // 1: the last list carried shardInfo; -1: it did not
}

// shardResources are the resources a sharded Operator watches, in
// watchStats order.
func shardResources() [3]string { return [3]string{"deployments", "replicasets", "pods"} }

func (s *watchStats) index(resource string) int {
	for i, r := range shardResources() {
		if r == resource {
			return i
		}
	}
	return -1
}

// shardedDeployments, shardedReplicaSets and shardedPods list and watch
// the objects of every namespace that f keeps.
func shardedDeployments(cs kubernetes.Interface, f *rangeFilter) informer.ListWatcher[*appsv1.Deployment] {
	c := cs.AppsV1().Deployments("")
	return filtered(c.List, c.Watch, func(l *appsv1.DeploymentList) ([]appsv1.Deployment, string, *metav1.ShardInfo) {
		return l.Items, l.ResourceVersion, l.ShardInfo
	}, f, "deployments")
}

func shardedReplicaSets(cs kubernetes.Interface, f *rangeFilter) informer.ListWatcher[*appsv1.ReplicaSet] {
	c := cs.AppsV1().ReplicaSets("")
	return filtered(c.List, c.Watch, func(l *appsv1.ReplicaSetList) ([]appsv1.ReplicaSet, string, *metav1.ShardInfo) {
		return l.Items, l.ResourceVersion, l.ShardInfo
	}, f, "replicasets")
}

func shardedPods(cs kubernetes.Interface, f *rangeFilter) informer.ListWatcher[*corev1.Pod] {
	c := cs.CoreV1().Pods("")
	return filtered(c.List, c.Watch, func(l *corev1.PodList) ([]corev1.Pod, string, *metav1.ShardInfo) {
		return l.Items, l.ResourceVersion, l.ShardInfo
	}, f, "pods")
}

// filtered is typed with a range filter: the shardSelector on every list
// and watch, and the objects outside the ranges dropped.
func filtered[T any, PT interface {
	*T
	informer.Object
}, L any](
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	items func(L) ([]T, string, *metav1.ShardInfo),
	f *rangeFilter, resource string,
) informer.ListWatcher[PT] {
	i := f.stats.index(resource)
	return informer.ListWatchFuncs[PT]{
		ListFunc: func(ctx context.Context) ([]PT, string, error) {
			l, err := list(ctx, metav1.ListOptions{ShardSelector: f.selector})
			if err != nil {
				return nil, "", err
			}
			objs, rv, info := items(l)
			if f.stats != nil && i >= 0 {
				v := int32(-1)
				if info != nil {
					v = 1
				}
				f.stats.serverSide[i].Store(v)
			}
			out := make([]PT, 0, len(objs))
			for k := range objs {
				if p := PT(&objs[k]); f.keep(p.GetNamespace()) {
					out = append(out, p)
				}
			}
			return out, rv, nil
		},
		WatchFunc: func(ctx context.Context, rv string) (watch.Interface, error) {
			w, err := watchFn(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, ShardSelector: f.selector})
			if err != nil {
				return nil, err
			}
			return watchfilter.Filter(w, func(ev watch.Event) bool {
				obj, ok := ev.Object.(PT)
				if !ok || ev.Type == watch.Bookmark {
					return true
				}
				if f.stats != nil && i >= 0 {
					f.stats.received[i].Add(1)
				}
				if f.keep(obj.GetNamespace()) {
					return true
				}
				if f.stats != nil && i >= 0 {
					f.stats.dropped[i].Add(1)
				}
				return false
			}), nil
		},
	}
}
