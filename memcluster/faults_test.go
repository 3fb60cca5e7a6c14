package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"

	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
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

// A deletion kube-apiserver makes in two storage writes (here an unbound
// pod's: its deletionTimestamp, then its removal) takes the request's
// latency again between them: for that long the pod is seen being
// deleted, before it goes and the request returns.
func TestFaultLatencySplitsATwoWriteDeletion(t *testing.T) {
	events, err := splitDeletion(t, nil)
	if err != nil {
		t.Fatalf("Delete() = %v", err)
	}
	if diff := cmp.Diff([]string{"MODIFIED deleting=true updated=false", "DELETED deleting=true updated=false"}, events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// Between the two writes of a deletion, an update of the pod (being
// deleted, with no grace period left and no finalizer) deletes it, as
// kube-apiserver's update does; the second write then finds it gone, and
// the Delete succeeds.
func TestFaultLatencyTwoWriteDeletionAndAnUpdateBetween(t *testing.T) {
	label := func(t *testing.T, c *Cluster) {
		p := must(c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}))(t)
		p.Labels = map[string]string{"between": "writes"}
		must(c.Pods("ns").Update(ctxT(t), p, metav1.UpdateOptions{}))(t)
	}
	events, err := splitDeletion(t, label)
	if err != nil {
		t.Fatalf("Delete() = %v", err)
	}
	want := []string{"MODIFIED deleting=true updated=false", "DELETED deleting=true updated=true"}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// splitDeletion creates pod ns/p unbound, deletes it through a
// delete latency of 1 s, calls between (if any) once the pod is seen being
// deleted, and returns the pod's watch events up to its DELETED one, and
// the Delete's error.
func splitDeletion(t *testing.T, between func(*testing.T, *Cluster)) ([]string, error) {
	t.Helper()
	c, fc := newTestCluster(t)
	p := must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	w := must(c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: p.ResourceVersion}))(t)
	defer w.Stop()
	if err := c.SetFaults(Faults{Rules: []FaultRule{{Verb: "delete", Latency: time.Second}}}); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var deleteErr error
	var wg sync.WaitGroup
	work, _ := clock.NewSource(fc, "test client").Start(nil)
	wg.Go(func() {
		defer work.Done()
		deleteErr = c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{})
		done.Store(true)
	})
	// The events, as received (receiving ends an event's work).
	var mu sync.Mutex
	var events []string
	received := make(chan struct{})
	go func() {
		defer close(received)
		for ev := range w.ResultChan() {
			p := ev.Object.(*corev1.Pod)
			mu.Lock()
			events = append(events, fmt.Sprintf("%s deleting=%t updated=%t", ev.Type, p.DeletionTimestamp != nil, p.Labels["between"] != ""))
			mu.Unlock()
			if ev.Type == watch.Deleted {
				return
			}
		}
	}()
	deleting := func() bool {
		got, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil
	}
	if err := c.RunUntil(ctxT(t), deleting, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := fc.Now().Sub(t0); got != time.Second || done.Load() {
		t.Errorf("the pod is seen being deleted at +%v, the Delete returned: %t; want +1s, not yet", got, done.Load())
	}
	if between != nil {
		between(t, c)
	}
	if err := c.RunUntil(ctxT(t), done.Load, time.Minute); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := fc.Now().Sub(t0); got != 2*time.Second {
		t.Errorf("the Delete returned at +%v; want +2s", got)
	}
	_, err := c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{})
	if gone := apierrors.IsNotFound(err); gone != (deleteErr == nil) {
		t.Errorf("Get() after the Delete = %v; the Delete = %v", err, deleteErr)
	}
	select {
	case <-received:
	case <-ctxT(t).Done():
		t.Fatal("no DELETED event")
	}
	mu.Lock()
	defer mu.Unlock()
	return events, deleteErr
}
