//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/controllerruntime"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// binDir is where kube/hack/controlplane.sh puts etcd and kube-apiserver.
func binDir(t *testing.T) string {
	if d := os.Getenv("CTRLKIT_CONTROLPLANE_BIN"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache", "ctrlkit", "realcluster", "v1.37.1", "bin")
}

func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	dir := binDir(t)
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		t.Fatalf("no control plane binaries in %s (build them with kube/hack/controlplane.sh build): %v", dir, err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return cfg
}

// kubelet makes every pod of namespace Running and Ready as soon as it
// appears: the stand-in for nodes, which envtest has none of.
func kubelet(ctx context.Context, t *testing.T, c client.WithWatch, namespace string) {
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(namespace))
	if err != nil {
		t.Errorf("kubelet: watch: %v", err)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if err := c.Status().Update(ctx, pod); err != nil && ctx.Err() == nil {
			t.Logf("kubelet: %s: %v (the next event retries)", pod.Name, err)
		}
	}
}

// TestManager runs both controllers in a Manager whose cache holds one
// namespace only, creates a Deployment and rolls out an image change, and
// checks each step converges long before the ReplicaSet expectations'
// five-minute timeout (an adapter that missed the observations would
// stall there).
func TestManager(t *testing.T) {
	cfg := startAPIServer(t)
	const ns = "ctrlkit-e2e"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:     testr.New(t),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: skipNameValidation(),
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllerruntime.Add(mgr, controllerruntime.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	kubeletDone := make(chan struct{})
	go func() { defer close(kubeletDone); kubelet(ctx, t, c, ns) }()
	t.Cleanup(func() { cancel(); <-kubeletDone })

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(4)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	start := time.Now()
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	waitRolledOut(ctx, t, c, key, "nginx:1.27")
	t.Logf("create: rolled out in %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`))); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(ctx, t, c, key, "nginx:1.28")
	t.Logf("image change: rolled out in %v", time.Since(start).Round(time.Millisecond))

	var rss appsv1.ReplicaSetList
	if err := c.List(ctx, &rss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, rs := range rss.Items {
		got[rs.Spec.Template.Spec.Containers[0].Image+" rev "+rs.Annotations[rollout.RevisionAnnotation]] = *rs.Spec.Replicas
	}
	want := map[string]int32{"nginx:1.27 rev 1": 0, "nginx:1.28 rev 2": 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ReplicaSets = %v; want %v", got, want)
	}
}

// waitRolledOut waits, watching the Deployment, until kubectl rollout
// status would say it is done with image. A bound far below the
// expectations timeout (5 min) turns a stall into a failure.
func waitRolledOut(ctx context.Context, t *testing.T, c client.WithWatch, key types.NamespacedName, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := c.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(key.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last string
	for ev := range w.ResultChan() {
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok || d.Name != key.Name {
			continue
		}
		st, err := rollout.Status(d, 0)
		if err == nil {
			last = st.Message
		}
		if err == nil && st.Done && d.Spec.Template.Spec.Containers[0].Image == image {
			return
		}
	}
	t.Fatalf("%s not rolled out to %s before the deadline; last status: %q", key, image, last)
}

func ptr[T any](v T) *T { return &v }

// skipNameValidation lets each test register the controllers with its own
// Manager: controller-runtime checks names across the process.
func skipNameValidation() config.Controller {
	skip := true
	return config.Controller{SkipNameValidation: &skip}
}
