package controlplane_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/controlplane"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// A Deployment rolled out, then updated, on an in-memory cluster in
// virtual time: docs/memcluster.md's snippet, complete.
func ExampleStart() {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewDeterministic(start)
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	cp, err := controlplane.Start(ctx, c, controlplane.Config{}) // informers, both controllers, a kubelet
	if err != nil {
		panic(err)
	}
	defer cp.Stop()

	replicas := int32(3)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := c.Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	rolledOut := func() bool { // the rollout of the current template is complete
		d, err := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		st, err := rollout.Status(d, 0)
		return err == nil && st.Done
	}
	if err := c.RunUntil(ctx, rolledOut, time.Hour); err != nil { // an hour-long rollout in milliseconds
		panic(err)
	}
	fmt.Println("rolled out after", fc.Now().Sub(start))

	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	if _, err := c.Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		panic(err)
	}
	updated := fc.Now()
	if err := c.RunUntil(ctx, rolledOut, time.Hour); err != nil {
		panic(err)
	}
	fmt.Println("updated after", fc.Now().Sub(updated))
	rss, err := cp.ReplicaSets.Cache().List("default", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(rss), "ReplicaSets")
	// Output:
	// rolled out after 2s
	// updated after 6s
	// 2 ReplicaSets
}
