//go:build e2e

package compare

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScale creates CTRLKIT_E2E_SCALE Deployments of 4 replicas at once
// (500 is the reference run), with upstream and then with ours, and
// reports the time until all are complete and the writes. Opt-in: it is
// skipped unless CTRLKIT_E2E_SCALE is set.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CTRLKIT_E2E_SCALE"))
	if n <= 0 {
		t.Skip("set CTRLKIT_E2E_SCALE=500 to run the scale comparison")
	}
	ctx := context.Background()
	sc := scenario{name: fmt.Sprintf("%d Deployments × 4", n), act: func(s *run) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				d := webDeployment(4, "nginx:1", "", "")
				d.Name = fmt.Sprintf("web-%03d", i)
				d.Spec.Selector.MatchLabels = map[string]string{"app": d.Name}
				d.Spec.Template.Labels = map[string]string{"app": d.Name}
				if _, err := s.cs.AppsV1().Deployments(s.ns).Create(s.ctx, d, metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}}
	allComplete := func(snap cluster.Snapshot) bool {
		if len(snap.Deployments) < n {
			return false
		}
		for _, d := range snap.Deployments {
			if !cluster.Complete(d) {
				return false
			}
		}
		return true
	}
	measure := func(ns string, writes func() map[kube.Request]int, countsHarness bool) (time.Duration, map[kube.Request]int) {
		s := newRun(t, ctx, ns)
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		ready := make(chan struct{})
		wg.Go(func() { s.rec.Run(rctx, ready) })
		<-ready
		kubelet := &cluster.Kubelet{Client: s.cs, Namespace: ns, ReadyDelay: readyDelay}
		wg.Go(func() { _ = kubelet.Run(rctx) })
		before, hb := writes(), s.harness.Counts()
		start := time.Now()
		sc.act(s)
		done, err := s.rec.WaitFor(ctx, 15*time.Minute, allComplete)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		w := diff(writes(), before)
		if countsHarness {
			for r, c := range diff(s.harness.Counts(), hb) {
				if w[r] -= c; w[r] <= 0 {
					delete(w, r)
				}
			}
		}
		return done.Sub(start), w
	}

	if err := cp.StartKCM(ctx, "deployment-controller,replicaset-controller,garbage-collector-controller"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	upT, upW := measure("scale-upstream", func() map[kube.Request]int {
		m, _, err := cp.RequestTotals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[kube.Request]int{}
		for r, v := range m {
			if controllerResource(r) {
				out[r] = int(v)
			}
		}
		return out
	}, true)
	if err := cp.StopKCM(ctx); err != nil {
		t.Fatal(err)
	}
	m := new(kube.Metrics)
	opCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	op := &kube.Operator{Config: cp.Config(20, 30), Namespace: "scale-ctrlkit", Metrics: m}
	wg.Go(func() {
		if err := op.Run(opCtx); err != nil {
			t.Error(err)
		}
	})
	ourT, ourW := measure("scale-ctrlkit", m.Requests.Counts, false)
	stop()
	wg.Wait()
	t.Logf("%s: ours %.1f s, %d writes (%s)", sc.name, ourT.Seconds(), total(ourW, notEvent), summarize(ourW))
	t.Logf("%s: upstream %.1f s, %d writes (%s)", sc.name, upT.Seconds(), total(upW, notEvent), summarize(upW))
}
