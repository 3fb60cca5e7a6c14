package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestSmokeE2E(t *testing.T) {
	fc := clock.NewFake(start)
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 3})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	dInf := informer.New[*appsv1.Deployment](c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	rsInf := informer.New[*appsv1.ReplicaSet](c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	pInf := informer.New[*corev1.Pod](c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	cl := memcluster.ControllerClient{Cluster: c}
	dc, err := deployment.NewController(deployment.ControllerConfig{Deployments: dInf, ReplicaSets: rsInf, Pods: pInf, Client: cl, Clock: fc})
	if err != nil { t.Fatal(err) }
	rc, err := replicaset.NewController(replicaset.ControllerConfig{ReplicaSets: rsInf, Pods: pInf, Client: cl, Clock: fc})
	if err != nil { t.Fatal(err) }
	k := memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: memcluster.RandomModel(memcluster.PodBehavior{StartDelay: 5 * time.Second}, 10*time.Second, 60*time.Second)})
	for _, run := range []func(){func() { _ = dInf.Run(ctx) }, func() { _ = rsInf.Run(ctx) }, func() { _ = pInf.Run(ctx) },
		func() { _ = dc.Run(ctx) }, func() { _ = rc.Run(ctx) }, func() { k.Run(ctx) }} {
		wg.Go(run)
	}
	d := webDeployment()
	d.Spec.Replicas = ptr(int32(10))
	if _, err := c.Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil { t.Fatal(err) }
	done := func(image string) func() bool {
		return func() bool {
			d, err := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil { return false }
			s := d.Status
			return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 10 && s.AvailableReplicas == 10 && s.Replicas == 10 && d.Spec.Template.Spec.Containers[0].Image == image
		}
	}
	wall := time.Now()
	if err := c.RunUntil(ctx, done("nginx:1.27"), time.Hour); err != nil { t.Fatal(err) }
	t.Logf("rollout 1 at +%v (wall %v)", fc.Now().Sub(start), time.Since(wall))
	if _, err := c.Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`), metav1.PatchOptions{}); err != nil { t.Fatal(err) }
	if err := c.RunUntil(ctx, done("nginx:1.28"), time.Hour); err != nil { t.Fatal(err) }
	t.Logf("rollout 2 at +%v (wall %v)", fc.Now().Sub(start), time.Since(wall))
	rss, _, _ := c.ReplicaSets("default").List(ctx, metav1.ListOptions{})
	pods, _, _ := c.Pods("default").List(ctx, metav1.ListOptions{})
	t.Logf("%d rs, %d pods", len(rss), len(pods))
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func webDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}
func ptr[T any](v T) *T { return &v }
