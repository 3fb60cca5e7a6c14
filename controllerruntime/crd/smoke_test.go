package crd

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

func TestSmoke(t *testing.T) {
	c := memcluster.New(memcluster.Config{Seed: 1})
	s, err := Serve(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InstallPaths(t.Context(), "testdata/crds"); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}, QPS: -1}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "a", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "size": int64(5), "junk": 1},
	}}
	err = cl.Create(t.Context(), u)
	t.Logf("create size 5: %v", err)
	u.Object["spec"].(map[string]any)["size"] = int64(2)
	u.Object["spec"].(map[string]any)["minReady"] = int64(3)
	err = cl.Create(t.Context(), u)
	t.Logf("create minReady 3: %v", err)
	delete(u.Object["spec"].(map[string]any), "minReady")
	err = cl.Create(t.Context(), u)
	t.Logf("create: %v %v", err, u.Object)
}
