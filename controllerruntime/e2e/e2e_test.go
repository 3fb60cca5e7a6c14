//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	dto "github.com/prometheus/client_model/go"
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
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

// startManager runs mgr until the test ends (its cleanup stops it and
// fails the test on the manager's error), and returns the manager's
// context and the function that cancels it.
func startManager(t *testing.T, mgr ctrl.Manager) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return ctx, cancel
}

// kubeletIn creates namespace ns through c and runs kubelet on it until
// the test ends; its cleanup calls stop (the manager's cancel, whose
// context ctx is) and waits for the kubelet to return.
func kubeletIn(ctx context.Context, t *testing.T, c client.WithWatch, ns string, stop context.CancelFunc) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	kubeletDone := make(chan struct{})
	go func() { defer close(kubeletDone); kubelet(ctx, t, c, ns) }()
	t.Cleanup(func() { stop(); <-kubeletDone })
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
	ctx, cancel := startManager(t, mgr)

	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kubeletIn(ctx, t, c, ns, cancel)

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
	checkMetrics(t)
}

// checkMetrics checks that the series controller-runtime dashboards query
// carry data for both controllers after a rollout: they come from
// controller-runtime's own registry, which the Manager serves on /metrics.
func checkMetrics(t *testing.T) {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	for name, keys := range map[string]string{
		"controller_runtime_reconcile_total":                 "controller,result",
		"controller_runtime_reconcile_errors_total":          "controller",
		"controller_runtime_terminal_reconcile_errors_total": "controller",
		"controller_runtime_reconcile_time_seconds":          "controller",
		"controller_runtime_active_workers":                  "controller",
		"controller_runtime_max_concurrent_reconciles":       "controller",
		"workqueue_depth":                                    "controller,name,priority",
		"workqueue_adds_total":                               "controller,name",
		"workqueue_queue_duration_seconds":                   "controller,name",
		"workqueue_work_duration_seconds":                    "controller,name",
		"workqueue_unfinished_work_seconds":                  "controller,name",
		"workqueue_longest_running_processor_seconds":        "controller,name",
		"workqueue_retries_total":                            "controller,name",
		"rest_client_requests_total":                         "code,host,method",
	} {
		mf := byName[name]
		if mf == nil {
			t.Errorf("controller-runtime's registry lacks %s", name)
			continue
		}
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			var ks []string
			for _, l := range m.GetLabel() {
				ks = append(ks, l.GetName())
				if l.GetName() == "controller" {
					seen[l.GetValue()] = true
				}
			}
			if got := strings.Join(ks, ","); got != keys {
				t.Errorf("%s has labels %s; want %s", name, got, keys)
				break
			}
		}
		if strings.HasPrefix(keys, "controller") && (!seen[controllerruntime.DeploymentControllerName] || !seen[controllerruntime.ReplicaSetControllerName]) {
			t.Errorf("%s has series for controllers %v; want both of ours", name, seen)
		}
	}
	for _, ctl := range []string{controllerruntime.DeploymentControllerName, controllerruntime.ReplicaSetControllerName} {
		var ok float64
		for _, m := range byName["controller_runtime_reconcile_total"].GetMetric() {
			if labelsOf(m)["controller"] == ctl && labelsOf(m)["result"] == "success" {
				ok = m.GetCounter().GetValue()
			}
		}
		if ok == 0 {
			t.Errorf(`controller_runtime_reconcile_total{controller=%q,result="success"} = 0 after two rollouts`, ctl)
		}
	}
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
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
