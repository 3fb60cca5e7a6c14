package replicaset_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// A Controller registers its handlers in NewController, and announces its
// workers to its queue once they have synced, so that on a fake clock a
// simulation waits for Run rather than finding nothing to do (or moving
// time on) because Run's goroutine has not started yet. This failed as a
// stall, now and then, in the package examples on a busy machine, when the
// handlers were registered by Run.
func TestControllerStartIsTracked(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := memcluster.New(memcluster.Config{Clock: fc, Seed: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	rsInf := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: fc})
	podInf := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: fc})
	rc, err := replicaset.NewController(replicaset.ControllerConfig{ReplicaSets: rsInf, Pods: podInf,
		Client: memcluster.ControllerClient{Cluster: c}, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = rsInf.Run(ctx) })
	wg.Go(func() { _ = podInf.Run(ctx) })
	three := int32(3)
	labels := map[string]string{"app": "web"}
	if _, err := c.ReplicaSets("ns").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Run has not been called, but once the informers have delivered the
	// ReplicaSet its key is unfinished work, and stays so: the simulation
	// waits for Run. (Had the handlers been registered by Run, the key
	// would never count and this loop would not end.)
	for !strings.Contains(fc.Busy(), `workqueue "replicaset" ×1`) {
		runtime.Gosched()
	}
	if busy := fc.Busy(); !strings.Contains(busy, `workqueue "replicaset" ×1`) {
		t.Fatalf("before Run, the clock's unfinished work is %q; want the ReplicaSet's key", busy)
	}
	wg.Go(func() { _ = rc.Run(ctx) })
	pods := func() bool {
		ps, _, err := c.Pods("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(ps) == 3
	}
	if err := c.RunUntil(ctx, pods, time.Minute); err != nil {
		t.Fatalf("RunUntil: %v", err)
	}
}
