package informer_test

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
)

// shopPod returns a pod in namespace "shop" with label app=app, controlled
// by the ReplicaSet with UID owner (none if "").
func shopPod(name, app string, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: name, ResourceVersion: "1", Labels: map[string]string{"app": app},
	}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: owner, Controller: new(true),
		}}
	}
	return p
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	slices.Sort(names)
	return names
}

// A Cache answers typed lookups by key, by namespace and label selector,
// and by index.
func ExampleCache() {
	pods := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	for _, p := range []*corev1.Pod{
		shopPod("web-1", "web", "rs-uid"),
		shopPod("web-2", "web", "rs-uid"),
		shopPod("db-1", "db", ""),
	} {
		if err := pods.Add(p); err != nil {
			fmt.Println(err)
		}
	}

	p, err := pods.Get(types.NamespacedName{Namespace: "shop", Name: "db-1"})
	fmt.Println("get:", p.Name, err)
	_, err = pods.Get(types.NamespacedName{Namespace: "shop", Name: "nope"})
	fmt.Println("get missing:", err, apierrors.IsNotFound(err))

	web, _ := pods.List("shop", labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("app=web:", podNames(web))
	owned, _ := pods.ByIndex(informer.IndexControllerUID, "rs-uid")
	fmt.Println("owned by rs-uid:", podNames(owned))

	// Reuse one slice across lookups: no allocation once it is big enough.
	buf := make([]*corev1.Pod, 0, 16)
	buf = pods.AppendList(buf[:0], "shop", nil)
	fmt.Println("in shop:", len(buf))

	if err := pods.Add(&corev1.Pod{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// get: db-1 <nil>
	// get missing: pods "nope" not found true
	// app=web: [web-1 web-2]
	// owned by rs-uid: [web-1 web-2]
	// in shop: 3
	// informer: add: *v1.Pod in namespace "" has no name
}

// An Informer lists, then watches, keeping its cache current and telling
// handlers about each change after the cache has it.
func ExampleInformer() {
	fw := watch.NewFake() // the API server's watch, played by a test fake
	lw := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(ctx context.Context) ([]*corev1.Pod, string, error) {
			return []*corev1.Pod{shopPod("web-1", "web", "")}, "100", nil
		},
		WatchFunc: func(ctx context.Context, resourceVersion string) (watch.Interface, error) {
			return fw, nil
		},
	}
	inf := informer.New[*corev1.Pod](lw, informer.Config[*corev1.Pod]{})

	events := make(chan string, 10)
	reg, err := inf.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) { events <- "add " + p.Name },
		OnDelete: func(d informer.Deleted[*corev1.Pod]) {
			events <- "delete " + d.Key.String()
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()

	<-reg.Synced() // the handler has seen the first list
	fmt.Println(<-events)
	fw.Add(shopPod("web-2", "web", ""))
	fmt.Println(<-events)
	fw.Delete(shopPod("web-1", "web", ""))
	fmt.Println(<-events)
	cached, err := inf.Cache().List("", nil)
	fmt.Println("cached:", podNames(cached), err)

	cancel()
	fmt.Println("Run returned", <-done)
	// Output:
	// add web-1
	// add web-2
	// delete shop/web-1
	// cached: [web-2] <nil>
	// Run returned <nil>
}
