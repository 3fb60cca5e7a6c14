package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The tests of a sample-controller-shaped program, in its package main:
// TestMain starts the cluster and runs the program's own run function
// against it. The cluster is the bench (clustertest.NewServer, on the
// wall clock, with its Deployment and ReplicaSet controllers, kubelet and
// garbage collector), or the cluster the program's own -kubeconfig and
// -master flags name (go test ./operators/greeter -args
// -kubeconfig=$HOME/.kube/config; the Greeter CRD must be installed).
//
// controller-runtime's envtest cannot start one here: importing it
// registers -kubeconfig on flag.CommandLine a second time, and the test
// binary panics at init ("flag redefined: kubeconfig"). That is why
// TestImportsRegisterNoFlags exists.

var (
	kube     kubernetes.Interface
	greeters versioned.Interface
	onBench  bool
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	flag.Parse()
	if os.Getenv("CTRLKIT_ENVTEST") != "" && kubeconfig == "" && masterURL == "" {
		fmt.Println("skipped on envtest: a package main with its own -kubeconfig flag cannot import controller-runtime's envtest; pass -args -kubeconfig=... for a real cluster")
		return 0
	}
	start := time.Now()
	var cfg *rest.Config
	if kubeconfig != "" || masterURL != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags(masterURL, kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else {
		// Pods that start at once and go a millisecond after their
		// deletion: the kubelet's default takes seconds of wall time.
		kubelet := memcluster.KubeletConfig{Model: memcluster.FixedModel(memcluster.PodBehavior{ShutdownDelay: time.Millisecond})}
		srv, err := clustertest.NewServer(clustertest.Options{CRDDirectoryPaths: []string{filepath.Join("config", "crd")}, Kubelet: kubelet})
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting the bench:", err)
			return 1
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stopping the bench:", err)
			}
		}()
		cfg, onBench = srv.Config(), true
	}
	kube = kubernetes.NewForConfigOrDie(cfg)
	greeters = versioned.NewForConfigOrDie(cfg)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, 2) }()
	fmt.Printf("cluster and controller started in %v\n", time.Since(start))

	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		code = 1
	}
	return code
}

// Importing the bench (and everything else this program and its tests
// import) registers no flag on flag.CommandLine: the flags are the
// program's own and the testing package's.
func TestImportsRegisterNoFlags(t *testing.T) {
	var names []string
	flag.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") {
			names = append(names, f.Name)
		}
	})
	slices.Sort(names)
	if diff := cmp.Diff([]string{"kubeconfig", "master"}, names); diff != "" {
		t.Errorf("flags on flag.CommandLine mismatch (-want +got):\n%s", diff)
	}
}

// eventually polls cond every 10 ms until it returns nil, and fails the
// test with its last error after ten seconds.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v (last: %v)", what, err, last)
	}
}

func newGreeter(t *testing.T, name string, replicas int32) *greeterv1.Greeter {
	t.Helper()
	g, err := greeters.GreeterV1().Greeters("default").Create(t.Context(), &greeterv1.Greeter{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       greeterv1.GreeterSpec{Message: "hello", Image: "greeter:1", Replicas: ptr.To(replicas)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGreeterGetsItsDeployment(t *testing.T) {
	g := newGreeter(t, "hello-deployment", 2)
	var dep *appsv1.Deployment
	eventually(t, "the deployment exists", func(ctx context.Context) (err error) {
		dep, err = kube.AppsV1().Deployments("default").Get(ctx, g.Name, metav1.GetOptions{})
		return err
	})
	if !metav1.IsControlledBy(dep, g) {
		t.Errorf("deployment owners %v, want the greeter %s", dep.OwnerReferences, g.UID)
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *dep.Spec.Replicas)
	}
	c := dep.Spec.Template.Spec.Containers
	if len(c) != 1 || c[0].Image != "greeter:1" || len(c[0].Env) != 1 || c[0].Env[0] != (corev1.EnvVar{Name: "GREETING", Value: "hello"}) {
		t.Errorf("containers %+v, want greeter:1 with GREETING=hello", c)
	}
	eventually(t, "the greeter's status observes its generation", func(ctx context.Context) error {
		got, err := greeters.GreeterV1().Greeters("default").Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation || meta.FindStatusCondition(got.Status.Conditions, "Ready") == nil {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
}

func TestGreeterReportsAvailablePods(t *testing.T) {
	if !onBench {
		t.Skip("this needs the bench's Deployment controller and kubelet")
	}
	g := newGreeter(t, "hello-ready", 3)
	eventually(t, "the greeter is ready with 3 available pods", func(ctx context.Context) error {
		got, err := greeters.GreeterV1().Greeters("default").Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.AvailableReplicas != 3 || !meta.IsStatusConditionTrue(got.Status.Conditions, "Ready") {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
	pods, err := kube.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + g.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want 3", len(pods.Items))
	}
}

func TestGreeterUpdatesItsDeployment(t *testing.T) {
	g := newGreeter(t, "hello-update", 1)
	eventually(t, "the deployment exists", func(ctx context.Context) error {
		_, err := kube.AppsV1().Deployments("default").Get(ctx, g.Name, metav1.GetOptions{})
		return err
	})
	eventually(t, "the greeter's spec is updated", func(ctx context.Context) error {
		cur, err := greeters.GreeterV1().Greeters("default").Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Message, cur.Spec.Replicas = "bonjour", ptr.To[int32](2)
		_, err = greeters.GreeterV1().Greeters("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	eventually(t, "the deployment greets in French with 2 replicas", func(ctx context.Context) error {
		dep, err := kube.AppsV1().Deployments("default").Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.Containers[0].Env[0].Value != "bonjour" {
			return fmt.Errorf("replicas %d, env %v", *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Env)
		}
		return nil
	})
}

func TestGreeterLeavesAForeignDeploymentAlone(t *testing.T) {
	labels := map[string]string{"app": "other"}
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hello-taken", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "other:1"}}}}}}
	foreign, err := kube.AppsV1().Deployments("default").Create(t.Context(), foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := newGreeter(t, "hello-taken", 2)
	eventually(t, "the greeter says the deployment is not its own", func(ctx context.Context) error {
		got, err := greeters.GreeterV1().Greeters("default").Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		if c == nil || c.Reason != "DeploymentExists" || c.Message != "deployment hello-taken exists and is not controlled by this greeter" {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	dep, err := kube.AppsV1().Deployments("default").Get(t.Context(), foreign.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Spec.Containers[0].Image != "other:1" || *dep.Spec.Replicas != 1 || len(dep.OwnerReferences) != 0 {
		t.Errorf("the foreign deployment changed: %+v", dep.Spec)
	}
}

func TestGreeterDeletionDeletesItsDeployment(t *testing.T) {
	if !onBench {
		t.Skip("this needs the bench's garbage collector")
	}
	g := newGreeter(t, "hello-gone", 1)
	eventually(t, "the deployment exists", func(ctx context.Context) error {
		_, err := kube.AppsV1().Deployments("default").Get(ctx, g.Name, metav1.GetOptions{})
		return err
	})
	if err := greeters.GreeterV1().Greeters("default").Delete(t.Context(), g.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deployment and its pods are gone", func(ctx context.Context) error {
		if _, err := kube.AppsV1().Deployments("default").Get(ctx, g.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("deployment: %v", err)
		}
		pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + g.Name})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}
