package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"

	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestListCatchUp checks Faults.ListCatchUp: a consistent list waits for
// its kind's watch cache after a write of another kind, and only then.
func TestListCatchUp(t *testing.T) {
	const catchUp = 95 * time.Millisecond
	tests := []struct {
		name string
		list func(ctx context.Context, c *Cluster) error // after a pod is created at +0
		want time.Duration
	}{
		{name: "replicasets, another kind", want: catchUp, list: func(ctx context.Context, c *Cluster) error {
			_, _, err := c.ReplicaSets("ns").List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "pods, the written kind", want: 0, list: func(ctx context.Context, c *Cluster) error {
			_, _, err := c.Pods("ns").List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "replicasets at resourceVersion 0, from the cache as it is", want: 0, list: func(ctx context.Context, c *Cluster) error {
			_, _, err := c.ReplicaSets("ns").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			return err
		}},
		{name: "replicasets after a write of their own", want: 0, list: func(ctx context.Context, c *Cluster) error {
			if _, err := c.ReplicaSets("ns").Create(ctx, replicaSet("rs", nil), metav1.CreateOptions{}); err != nil {
				return err
			}
			_, _, err := c.ReplicaSets("ns").List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := newTestCluster(t)
			if err := c.SetFaults(Faults{ListCatchUp: catchUp}); err != nil {
				t.Fatal(err)
			}
			must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
			if got := listTook(t, c, fc, tt.list); got != tt.want {
				t.Errorf("the list returned at +%v; want +%v", got, tt.want)
			}
		})
	}
	t.Run("after the catch-up", func(t *testing.T) {
		c, fc := newTestCluster(t)
		must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
		if err := c.SetFaults(Faults{ListCatchUp: catchUp, Rules: []FaultRule{{Verb: "list", Latency: time.Second}}}); err != nil {
			t.Fatal(err)
		}
		got := listTook(t, c, fc, func(ctx context.Context, c *Cluster) error {
			_, _, err := c.ReplicaSets("ns").List(ctx, metav1.ListOptions{})
			return err
		})
		if got != time.Second {
			t.Errorf("a list delayed by 1s, more than the catch-up, returned at +%v; want +1s", got)
		}
	})
	if err := New(Config{}).SetFaults(Faults{ListCatchUp: -time.Millisecond}); err == nil {
		t.Error("SetFaults with a negative ListCatchUp: no error")
	}
}

// listTook runs list as tracked work and returns how long it took on the
// cluster's clock.
func listTook(t *testing.T, c *Cluster, fc *clock.Fake, list func(context.Context, *Cluster) error) time.Duration {
	t.Helper()
	start := fc.Now()
	var done atomic.Bool
	var took atomic.Int64
	var wg sync.WaitGroup
	work, _ := clock.NewSource(fc, "test client").Start(nil)
	wg.Go(func() {
		defer work.Done()
		if err := list(ctxT(t), c); err != nil {
			t.Errorf("list: %v", err)
		}
		took.Store(int64(fc.Now().Sub(start)))
		done.Store(true)
	})
	if err := c.RunUntil(ctxT(t), done.Load, time.Minute); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return time.Duration(took.Load())
}
