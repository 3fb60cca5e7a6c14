package greeter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions"
)

// A plain go test suite in envtest's shape: TestMain starts the
// environment and the controller; the environment lines pick envtest
// (CTRLKIT_ENVTEST=1, binaries in KUBEBUILDER_ASSETS) or the bench.

var (
	cfg       *rest.Config
	kube      kubernetes.Interface
	greeters  versioned.Interface
	onEnvtest = os.Getenv("CTRLKIT_ENVTEST") != ""
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if err := greeterv1.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	crds := []string{filepath.Join("config", "crd")}
	var testEnv interface{ Stop() error }
	var err error
	if onEnvtest {
		env := &crenvtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true}
		testEnv = env
		cfg, err = env.Start()
	} else {
		env := &envtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true,
			Controllers: clustertest.AllControllers} // the specs that need them are skipped on envtest
		testEnv = env
		cfg, err = env.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the environment:", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the environment:", err)
		}
	}()
	kube = kubernetes.NewForConfigOrDie(cfg)
	greeters = versioned.NewForConfigOrDie(cfg)

	ctx, cancel := context.WithCancel(context.Background())
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 0)
	greeterInformers := externalversions.NewSharedInformerFactory(greeters, 0)
	ctl, err := NewController(kube, greeters, kubeInformers.Apps().V1().Deployments(), greeterInformers.Greeter().V1().Greeters())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		return 1
	}
	kubeInformers.Start(ctx.Done())
	greeterInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx, 2) }()
	fmt.Printf("environment and controller started in %v\n", time.Since(start))

	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		code = 1
	}
	kubeInformers.Shutdown()
	greeterInformers.Shutdown()
	return code
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
	if onEnvtest {
		t.Skip("envtest runs no Deployment controller and no kubelet")
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
	if onEnvtest {
		t.Skip("envtest runs no garbage collector")
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
