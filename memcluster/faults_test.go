package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"

	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFaultsReproducible(t *testing.T) {
	outcomes := func(seed uint64) []string {
		c := New(Config{Seed: seed})
		c.SetFaults(Faults{Rules: []FaultRule{{Verb: "create", Resource: "pods", Rate: 0.5, Reason: metav1.StatusReasonServiceUnavailable}}})
		var out []string
		for i := range 20 {
			_, err := c.Pods("ns").Create(ctxT(t), pod(fmt.Sprint("p", i), "", ""), metav1.CreateOptions{})
			switch {
			case err == nil:
				out = append(out, "ok")
			case apierrors.IsServiceUnavailable(err):
				out = append(out, "503")
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		// Other verbs and kinds are untouched.
		if _, _, err := c.Pods("ns").List(ctxT(t), metav1.ListOptions{}); err != nil {
			t.Fatalf("List() = %v", err)
		}
		if _, err := c.ReplicaSets("ns").Create(ctxT(t), replicaSet("rs", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("ReplicaSet Create() = %v", err)
		}
		return out
	}
	a, b := outcomes(42), outcomes(42)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("seed 42 is not reproducible (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, outcomes(43)) {
		t.Errorf("seeds 42 and 43 injected the same faults: %v", a)
	}
	if ok := countOf(a, "ok"); ok == 0 || ok == 20 {
		t.Errorf("rate 0.5 gave %d successes in 20", ok)
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestFaultErrors(t *testing.T) {
	tests := []struct {
		kind metav1.StatusReason
		is   func(error) bool
	}{
		{"", apierrors.IsInternalError},
		{metav1.StatusReasonInternalError, apierrors.IsInternalError},
		{metav1.StatusReasonServiceUnavailable, apierrors.IsServiceUnavailable},
		{metav1.StatusReasonConflict, apierrors.IsConflict},
		{metav1.StatusReasonServerTimeout, apierrors.IsServerTimeout},
		{metav1.StatusReasonTooManyRequests, apierrors.IsTooManyRequests},
		// Any other reason is returned as asked, with code 500.
		{metav1.StatusReasonGone, func(err error) bool {
			return apierrors.IsGone(err) && apierrors.ReasonForError(err) == metav1.StatusReasonGone &&
				err.(apierrors.APIStatus).Status().Code == 500
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.kind), func(t *testing.T) {
			c, _ := newTestCluster(t)
			c.SetFaults(Faults{Rules: []FaultRule{{Rate: 1, Reason: tt.kind}}})
			if _, err := c.Deployments("ns").Get(ctxT(t), "x", metav1.GetOptions{}); !tt.is(err) {
				t.Errorf("Get() error = %v; want reason %q", err, tt.kind)
			}
		})
	}
}

func TestFaultAfterWrite(t *testing.T) {
	c, _ := newTestCluster(t)
	c.SetFaults(Faults{Rules: []FaultRule{{Verb: "create", Rate: 1, Reason: metav1.StatusReasonServerTimeout, AfterWrite: true}}})
	if _, err := c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}); !apierrors.IsServerTimeout(err) {
		t.Fatalf("Create() error = %v; want a timeout", err)
	}
	c.SetFaults(Faults{})
	if _, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}); err != nil {
		t.Errorf("the write behind a lost response is missing: %v", err)
	}
}

func TestFaultLatencyIsVirtual(t *testing.T) {
	c, fc := newTestCluster(t)
	must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	c.SetFaults(Faults{Rules: []FaultRule{{Verb: "get", Latency: 10 * time.Second}}})
	var done atomic.Bool
	var wg sync.WaitGroup
	// The request runs on a goroutine of its own: tracked work, as a
	// controller's requests are, so that the simulation waits for it.
	work, _ := clock.NewSource(fc, "test client").Start(nil)
	wg.Go(func() {
		defer work.Done()
		if _, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}); err != nil {
			t.Errorf("Get() = %v", err)
		}
		done.Store(true)
	})
	if err := c.RunUntil(ctxT(t), done.Load, time.Minute); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := fc.Now().Sub(t0); got != 10*time.Second {
		t.Errorf("Get() with 10s latency finished at +%v; want +10s", got)
	}
}

func TestWatchFaults(t *testing.T) {
	t.Run("lag", func(t *testing.T) {
		c, fc := newTestCluster(t)
		c.SetFaults(Faults{WatchLag: 5 * time.Second})
		w := must(c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{}))(t)
		defer w.Stop()
		// The event's work lasts until it is acknowledged, after it has
		// been recorded: the simulation cannot check before.
		acks := w.(interface {
			AckEvents()
			Ack()
		})
		acks.AckEvents()
		var got atomic.Value
		var wg sync.WaitGroup
		wg.Go(func() {
			ev := <-w.ResultChan()
			got.Store(fmt.Sprint(ev.Type, " at +", fc.Now().Sub(t0)))
			acks.Ack()
		})
		must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
		if err := c.RunUntil(ctxT(t), func() bool { return got.Load() != nil }, time.Minute); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got.Load() != "ADDED at +5s" {
			t.Errorf("lagging event: %v; want ADDED at +5s", got.Load())
		}
	})
	t.Run("drop", func(t *testing.T) {
		c, fc := newTestCluster(t)
		w := must(c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{}))(t)
		c.SetFaults(Faults{WatchDropRate: 1})
		must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
		if got := next(t, fc, w); got != "CLOSED" {
			t.Errorf("dropped watch delivered %q; want CLOSED", got)
		}
	})
}

func TestSetFaultsRejectsBadRules(t *testing.T) {
	for _, tt := range []struct {
		f    Faults
		want string
	}{
		{Faults{Rules: []FaultRule{{Verb: "Create", Resource: "pods", Rate: 1}}},
			`memcluster: fault rule 0 (verb "Create", resource "pods"): unknown verb "Create"`},
		{Faults{Rules: []FaultRule{{}, {Resource: "pods", Rate: 1.5}}},
			`memcluster: fault rule 1 (verb "", resource "pods"): rate 1.5 outside [0, 1]`},
		{Faults{WatchDropRate: -0.1}, `memcluster: fault WatchDropRate -0.1 outside [0, 1]`},
		{Faults{Rules: []FaultRule{{Verb: "patch", Latency: -time.Second}}},
			`memcluster: fault rule 0 (verb "patch", resource ""): negative latency -1s`},
		{Faults{WatchLag: -time.Millisecond}, `memcluster: fault WatchLag -1ms is negative`},
	} {
		c, _ := newTestCluster(t)
		if err := c.SetFaults(Faults{Rules: []FaultRule{{Verb: "get", Rate: 1}}}); err != nil {
			t.Fatal(err)
		}
		err := c.SetFaults(tt.f)
		if err == nil || err.Error() != tt.want {
			t.Errorf("SetFaults(%+v) = %v; want %s", tt.f, err, tt.want)
		}
		if _, err := c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
			t.Errorf("after a rejected SetFaults, Get() = %v; want the earlier rule's 500", err)
		}
	}
}
