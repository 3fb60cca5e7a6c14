package reconcile_test

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A worker decides from the error what to do with a key: retry it, or
// forget it when retrying cannot help.
func ExampleTerminal() {
	invalid := reconcile.Terminal(errors.New("invalid selector"))
	wrapped := fmt.Errorf("replicaset ns/web: %w", invalid)
	for _, err := range []error{wrapped, errors.New("conflict")} {
		if reconcile.IsTerminal(err) {
			fmt.Println("forget:", err)
		} else {
			fmt.Println("retry:", err)
		}
	}
	fmt.Println(errors.Unwrap(invalid))
	// Output:
	// forget: replicaset ns/web: terminal error: invalid selector
	// retry: conflict
	// invalid selector
}

// FromCache reads an informer cache through the context-taking readers
// the controllers take, including the reads by controller.
func ExampleFromCache() {
	c := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
	yes := true
	for _, rs := range []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: &yes}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stray"}},
	} {
		if err := c.Add(rs); err != nil {
			panic(err)
		}
	}
	r, err := reconcile.FromCache(c)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	owned, _ := r.ListByController(ctx, "ns", "web-uid")
	orphans, _ := r.ListByController(ctx, "ns", "")
	rs, _ := r.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "web-1"})
	fmt.Println(owned[0].Name, orphans[0].Name, rs.Name)
	// Output:
	// web-1 stray web-1
}
