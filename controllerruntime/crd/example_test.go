package crd_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/crd"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// ExampleServe serves the CRDs of a directory on a memcluster and creates
// custom resources with controller-runtime's client: the CRD's schema
// refuses one, defaults and prunes the other.
func ExampleServe() {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{Seed: 1})
	s, err := crd.Serve(c)
	if err != nil {
		panic(err)
	}
	if err := s.InstallPaths(ctx, "testdata/crds"); err != nil {
		panic(err)
	}
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		panic(err)
	}
	webApp := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.example.com/v1", "kind": "WebApp",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     spec,
		}}
	}

	fmt.Println(cl.Create(ctx, webApp("big", map[string]any{"image": "nginx", "size": 5})))
	small := webApp("small", map[string]any{"image": "nginx", "color": "red"})
	if err := cl.Create(ctx, small); err != nil {
		panic(err)
	}
	fmt.Println(small.Object["spec"])
	// Output:
	// WebApp.apps.example.com "big" is invalid: spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3
	// map[image:nginx size:1 tier:frontend]
}
