package memcluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Both packaged controllers run on the in-memory cluster: informers read
// it through ListWatcher, ControllerClient writes to it, and a kubelet
// runs the pods, all on one deterministic virtual clock, so the rollout
// takes the same virtual time and makes the same writes on every run. The
// update rolls one pod at a time (the default 25% of 3 is a surge of 1
// and no unavailable pod), two seconds per pod.
func ExampleControllerClient() {
	fc := clock.NewDeterministic(start)
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	client := memcluster.ControllerClient{Cluster: c}
	deployments := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: fc})
	replicaSets := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	pods := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: deployments, ReplicaSets: replicaSets, Pods: pods, Client: client, Clock: fc,
	})
	if err != nil {
		panic(err)
	}
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: replicaSets, Pods: pods, Client: client, Clock: fc,
	})
	if err != nil {
		panic(err)
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{}) // pods start in 1s, ready 1s later

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, run := range []func(context.Context) error{deployments.Run, replicaSets.Run, pods.Run, dc.Run, rc.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				panic(err)
			}
		})
	}
	wg.Go(func() { kubelet.Run(ctx) })

	d := webDeployment()
	d.Spec.Replicas = ptr(int32(3))
	if _, err := c.Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	rolledOut := func(image string) func() bool {
		return func() bool {
			d, err := c.Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil || d.Spec.Template.Spec.Containers[0].Image != image {
				return false
			}
			st, err := rollout.Status(d, 0)
			return err == nil && st.Done
		}
	}
	if err := c.RunUntil(ctx, rolledOut("nginx:1.27"), time.Hour); err != nil {
		panic(err)
	}
	fmt.Println("rolled out after", fc.Now().Sub(start))
	fmt.Print(replicaSetsOf(ctx, c, "web"))

	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	if _, err := c.Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		panic(err)
	}
	updated := fc.Now()
	if err := c.RunUntil(ctx, rolledOut("nginx:1.28"), time.Hour); err != nil {
		panic(err)
	}
	fmt.Println("updated after", fc.Now().Sub(updated))
	fmt.Print(replicaSetsOf(ctx, c, "web"))
	// Output:
	// rolled out after 2s
	// rs web-5c8597c5fb: revision 1, nginx:1.27, 3 replicas, 3 available
	// updated after 6s
	// rs web-5c8597c5fb: revision 1, nginx:1.27, 0 replicas, 0 available
	// rs web-7549484477: revision 2, nginx:1.28, 3 replicas, 3 available
}

// replicaSetsOf lists the ReplicaSets of Deployment name, by revision.
func replicaSetsOf(ctx context.Context, c *memcluster.Cluster, name string) string {
	rss, _, err := c.ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	rss = slices.DeleteFunc(rss, func(rs *appsv1.ReplicaSet) bool {
		ref := metav1.GetControllerOfNoCopy(rs)
		return ref == nil || ref.Name != name
	})
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		return strings.Compare(a.Annotations[rollout.RevisionAnnotation], b.Annotations[rollout.RevisionAnnotation])
	})
	var b strings.Builder
	for _, rs := range rss {
		fmt.Fprintf(&b, "rs %s: revision %s, %s, %d replicas, %d available\n", rs.Name, rs.Annotations[rollout.RevisionAnnotation],
			rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas, rs.Status.AvailableReplicas)
	}
	return b.String()
}
