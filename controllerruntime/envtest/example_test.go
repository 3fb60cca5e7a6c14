package envtest_test

import (
	"context"
	"fmt"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	envtest "github.com/ctrlkit/ctrlkit/controllerruntime/envtest" // was "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// An envtest suite's BeforeSuite and AfterSuite, on the bench: only the
// import line changed. As on envtest, the CRDs are installed and served
// with their schemas, and no controller runs: a Deployment gets no
// ReplicaSets until the suite makes them.
func ExampleEnvironment() {
	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Println(err)
		}
	}()
	k8sClient, err := client.New(cfg, client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	// The Site CRD requires spec.image.
	noImage := site("shop", map[string]any{"replicas": int64(1)})
	fmt.Println(k8sClient.Create(ctx, noImage))
	fmt.Println(k8sClient.Create(ctx, site("shop", map[string]any{"image": "nginx:1.27"})))

	if err := k8sClient.Create(ctx, deployment("web", 2)); err != nil {
		fmt.Println(err)
		return
	}
	var rss appsv1.ReplicaSetList
	if err := k8sClient.List(ctx, &rss); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replicasets:", len(rss.Items))
	var sites unstructured.UnstructuredList
	sites.SetAPIVersion("demo.ctrlkit.dev/v1")
	sites.SetKind("SiteList")
	if err := k8sClient.List(ctx, &sites); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sites:", len(sites.Items))
	// Output:
	// Site.demo.ctrlkit.dev "shop" is invalid: spec.image: Required value
	// <nil>
	// replicasets: 0
	// sites: 1
}
