//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
	"github.com/ctrlkit/ctrlkit/examples/webapp"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// webAppCRD is the WebApp CustomResourceDefinition: any spec, a status
// subresource.
func webAppCRD() *apiextensionsv1.CustomResourceDefinition {
	yes := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapps." + webapp.Kind.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: webapp.Kind.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "webapps", Singular: "webapp", Kind: webapp.Kind.Kind, ListKind: webapp.Kind.Kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: webapp.Kind.Version, Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// TestWorkload runs a WebApp (a custom resource) through a rolling update
// and a rollback with AddWorkloadController and AddReplicaSetController
// in a Manager, against a real kube-apiserver.
func TestWorkload(t *testing.T) {
	dir := binDir(t)
	env := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute,
		CRDInstallOptions: envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{webAppCRD()}}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := webapp.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Logger: testr.New(t), Metrics: metricsserver.Options{BindAddress: "0"}, Controller: skipNameValidation()})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllerruntime.AddWorkloadController(mgr, webapp.Kind,
		func() *webapp.List { return &webapp.List{} },
		func(l *webapp.List) []webapp.WebApp { return l.Items },
		controllerruntime.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := controllerruntime.AddReplicaSetController(mgr, controllerruntime.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := startManager(t, mgr)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "webapps"
	kubeletIn(ctx, t, c, ns, cancel)

	w := &webapp.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: webapp.Spec{Replicas: ptr(int32(3)), Image: "nginx:1.27"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	waitWebApp(ctx, t, c, key, "nginx:1.27")
	// The controller writes the WebApp's status meanwhile: a user's
	// read-modify-write retries on a conflict, as kubectl edit would.
	updateWebApp(ctx, t, c, key, func(w *webapp.WebApp) { w.Spec.Image = "nginx:1.28" })
	waitWebApp(ctx, t, c, key, "nginx:1.28")
	updateWebApp(ctx, t, c, key, func(w *webapp.WebApp) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations["deprecated.deployment.rollback.to"] = "1"
	})
	waitWebApp(ctx, t, c, key, "nginx:1.27")

	var rss appsv1.ReplicaSetList
	if err := c.List(ctx, &rss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, rs := range rss.Items {
		ref := metav1.GetControllerOf(&rs)
		if ref == nil || ref.Kind != webapp.Kind.Kind || ref.Name != "web" {
			t.Errorf("ReplicaSet %s is controlled by %v; want the WebApp", rs.Name, ref)
		}
		img, rev := rs.Spec.Template.Spec.Containers[0].Image, rs.Annotations[rollout.RevisionAnnotation]
		want := map[string]int32{"nginx:1.27": 3, "nginx:1.28": 0}[img]
		if *rs.Spec.Replicas != want {
			t.Errorf("ReplicaSet %s (%s, revision %s) has %d replicas; want %d", rs.Name, img, rev, *rs.Spec.Replicas, want)
		}
	}
	if len(rss.Items) != 2 {
		t.Errorf("%d ReplicaSets; want 2", len(rss.Items))
	}
}

// waitWebApp waits, watching, until the WebApp is rolled out with image.
func waitWebApp(ctx context.Context, t *testing.T, c client.WithWatch, key types.NamespacedName, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := c.Watch(ctx, &webapp.List{}, client.InNamespace(key.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last appsv1.DeploymentStatus
	for ev := range w.ResultChan() {
		app, ok := ev.Object.(*webapp.WebApp)
		if !ok || app.Name != key.Name {
			continue
		}
		last = app.Status.DeploymentStatus
		d := &appsv1.Deployment{ObjectMeta: app.ObjectMeta, Spec: app.DeploymentSpec(), Status: app.DeploymentStatus()}
		if st, err := rollout.Status(d, 0); err == nil && st.Done && app.Spec.Image == image {
			return
		}
	}
	t.Fatalf("WebApp %s not rolled out to %s before the deadline; last status %+v", key, image, last)
}

// updateWebApp reads the WebApp, changes it with f and writes it back,
// again from a fresh read when the write conflicts.
func updateWebApp(ctx context.Context, t *testing.T, c client.Client, key types.NamespacedName, f func(*webapp.WebApp)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var w webapp.WebApp
		if err := c.Get(ctx, key, &w); err != nil {
			return err
		}
		f(&w)
		return c.Update(ctx, &w)
	})
	if err != nil {
		t.Fatal(err)
	}
}
