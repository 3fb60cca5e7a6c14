// Command operator shows how to embed the Deployment and ReplicaSet
// controllers of this library in a custom operator: informers shared by
// both controllers, a work queue and workers per controller, and a
// graceful shutdown when the process gets SIGINT or SIGTERM.
//
// It runs against the in-memory API server of package memcluster, on the
// wall clock, with a simulated kubelet, and creates a demo Deployment;
// every event of the controllers is printed. Stop it with Ctrl-C:
//
//	go run ./examples/operator
//
// # A real cluster
//
// Only the Sources and the Client of [Config] change. The module
// github.com/ctrlkit/ctrlkit/kube adapts client-go: kube.Deployments,
// kube.ReplicaSets and kube.Pods turn a clientset into informer sources,
// kube.DeploymentClient and kube.ReplicaSetClient write through it, and
// kube.StartEvents records real Events:
//
//	cs := kubernetes.NewForConfigOrDie(restConfig)
//	op, err := New(Config{
//		Sources: Sources{
//			Deployments: kube.Deployments(cs, ""),
//			ReplicaSets: kube.ReplicaSets(cs, ""),
//			Pods:        kube.Pods(cs, ""),
//		},
//		Client: struct {
//			kube.DeploymentClient
//			kube.ReplicaSetClient
//		}{...}, // both over cs
//	})
//
// kube.Operator is the production version of this wiring, with leader
// election and metrics. Only one process may run these controllers
// against a cluster: stop kube-controller-manager's deployment and
// replicaset controllers first (--controllers=*,-deployment-controller,-replicaset-controller:
// without the *, kube-controller-manager would run no controller at all).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := memcluster.New(memcluster.Config{Clock: clock.Real{}})
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

// run runs the operator and a kubelet on c, creates the demo Deployment,
// and returns after ctx ends and everything has stopped.
func run(ctx context.Context, c *memcluster.Cluster, out io.Writer) error {
	wait, err := start(ctx, c, out)
	if err != nil {
		return err
	}
	return wait()
}

// start builds the operator and a kubelet on c, starts them, and creates
// the demo Deployment. It returns once all of that is done, so that a
// simulation on a fake clock sees every component before it runs; wait
// returns after ctx ends and everything has stopped.
func start(ctx context.Context, c *memcluster.Cluster, out io.Writer) (wait func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex // events come from several workers
	op, err := New(Config{
		Sources: Sources{
			Deployments: c.Deployments("").ListWatcher(),
			ReplicaSets: c.ReplicaSets("").ListWatcher(),
			Pods:        c.Pods("").ListWatcher(),
		},
		Client: memcluster.ControllerClient{Cluster: c},
		Clock:  c.Clock(),
		Events: deployment.EventRecorderFunc(func(obj runtime.Object, eventType, reason, message string) {
			mu.Lock()
			defer mu.Unlock()
			name := "?"
			if m, ok := obj.(metav1.Object); ok {
				name = m.GetNamespace() + "/" + m.GetName()
			}
			fmt.Fprintf(out, "%s %s %s: %s\n", eventType, name, reason, message)
		}),
	})
	if err != nil {
		cancel()
		return nil, err
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{})

	var wg sync.WaitGroup
	wg.Go(func() { kubelet.Run(ctx) })
	errc := make(chan error, 1)
	wg.Go(func() { errc <- op.Run(ctx) })

	if _, err := c.Deployments("default").Create(ctx, demo(), metav1.CreateOptions{}); err != nil {
		cancel()
		wg.Wait()
		return nil, fmt.Errorf("create the demo deployment: %w", err)
	}
	mu.Lock()
	fmt.Fprintln(out, "operator running; created deployment default/hello")
	mu.Unlock()
	return func() error {
		defer cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, "operator stopped")
		return <-errc
	}, nil
}

// demo is the Deployment the operator creates at start.
func demo() *appsv1.Deployment {
	labels := map[string]string{"app": "hello"}
	replicas := int32(3)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "hello", Image: "hello:1"}}},
			},
		},
	}
}
