package controllerruntime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
	"github.com/ctrlkit/ctrlkit/shard"
)

// ShardedInformers asks the server for the set's namespaces (shardSelector
// on the list and the watch), and keeps what a server without the gate
// sends outside them out of the cache; other kinds are left alone.
func TestShardedInformers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		halves, _ := shard.Split(2)
		set := shard.MustSet(halves[0])
		var mu sync.Mutex
		var selectors []string
		fw := watch.NewFake()
		var all []corev1.Pod
		for i := range 20 {
			all = append(all, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d-prod", i), Name: "p", ResourceVersion: "1"}})
		}
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
				mu.Lock()
				selectors = append(selectors, o.ShardSelector)
				mu.Unlock()
				return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: slices.Clone(all)}, nil // the gate off: everything
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				mu.Lock()
				selectors = append(selectors, o.ShardSelector)
				mu.Unlock()
				if o.SendInitialEvents != nil && *o.SendInitialEvents { // client-go's watch list, as kube-apiserver serves it
					go func() {
						for i := range all {
							fw.Add(&all[i])
						}
						fw.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
							Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
					}()
				}
				return fw, nil
			},
		}
		inf := controllerruntime.ShardedInformers(set)(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go inf.RunWithContext(ctx)
		synctest.Wait()
		for i := 20; i < 30; i++ {
			fw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d-prod", i), Name: "p", ResourceVersion: "2"}})
		}
		synctest.Wait()
		var want, got []string
		for i := range 30 {
			if ns := fmt.Sprintf("team-%d-prod", i); set.ContainsNamespace(ns) {
				want = append(want, ns+"/p")
			}
		}
		got = inf.GetStore().ListKeys()
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("cache mismatch (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(selectors) == 0 || slices.ContainsFunc(selectors, func(s string) bool { return s != set.Selector() }) {
			t.Errorf("selectors sent %q; want %q on every list and watch", selectors, set.Selector())
		}
		// Another kind: unchanged.
		plain := &toolscache.ListWatch{ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.ShardSelector != "" {
				t.Errorf("a ConfigMap list got shardSelector %q", o.ShardSelector)
			}
			return &corev1.ConfigMapList{}, nil
		}}
		_ = controllerruntime.ShardedInformers(set)(plain, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
		if _, err := toolscache.ToListerWatcherWithContext(plain).ListWithContext(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
