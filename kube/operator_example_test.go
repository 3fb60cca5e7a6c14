package kube_test

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// The operator ctrlkit-controller runs: both controllers and their
// informers on one rest.Config. Here the config reaches an in-memory API
// server in-process, with a kubelet whose pods start and become ready at
// once; against a real cluster it comes from a kubeconfig.
func ExampleOperator() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := memcluster.New(memcluster.Config{Seed: 1})
	memcluster.AddBuiltinKinds(c)
	wg.Go(func() {
		memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: memcluster.FixedModel(memcluster.PodBehavior{})}).Run(ctx)
	})
	cfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(c)}}

	op := &kube.Operator{Config: cfg, Workers: 2}
	wg.Go(func() {
		if err := op.Run(ctx); err != nil {
			panic(err)
		}
	})

	cs := kubernetes.NewForConfigOrDie(cfg)
	labels := map[string]string{"app": "web"}
	replicas := int32(3)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	d = waitRolledOut(ctx, cs, "default", "web")
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("deployment %s: %d updated, %d available\n", d.Name, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
	for _, rs := range rss.Items {
		fmt.Printf("rs %s: revision %s, %d ready\n", rs.Name, rs.Annotations[rollout.RevisionAnnotation], rs.Status.ReadyReplicas)
	}
	// Output:
	// deployment web: 3 updated, 3 available
	// rs web-5c8597c5fb: revision 1, 3 ready
}
