//go:build e2e

package compare

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// readyDelay is the simulated kubelet's time from pod creation to Ready.
const readyDelay = 500 * time.Millisecond

// run is one scenario executed against one namespace.
type run struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	cs      kubernetes.Interface
	harness *kube.WriteCounter // the test's own requests (user + kubelet)
	rec     *cluster.Recorder
	gen     int64 // generation of the test's last write to "web"
}

// result is what a run measured.
type result struct {
	converge time.Duration
	writes   map[kube.Request]int // the controllers' writes during act
	entries  []cluster.Entry      // observed during act
	final    finalState
}

func newRun(t *testing.T, ctx context.Context, ns string) *run {
	t.Helper()
	harness := new(kube.WriteCounter)
	cfg := cp.Config(200, 400)
	cfg.WrapTransport = harness.Wrap
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &run{t: t, ctx: ctx, ns: ns, cs: cs, harness: harness, rec: &cluster.Recorder{Client: cs, Namespace: ns}}
}

func (s *run) create(d *appsv1.Deployment) {
	s.t.Helper()
	got, err := s.cs.AppsV1().Deployments(s.ns).Create(s.ctx, d, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.gen = got.Generation
}

func (s *run) get() *appsv1.Deployment {
	s.t.Helper()
	d, err := s.cs.AppsV1().Deployments(s.ns).Get(s.ctx, "web", metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return d
}

func (s *run) update(f func(*appsv1.Deployment)) {
	s.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := s.cs.AppsV1().Deployments(s.ns).Get(s.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(d)
		d, err = s.cs.AppsV1().Deployments(s.ns).Update(s.ctx, d, metav1.UpdateOptions{})
		if err == nil {
			s.gen = d.Generation
		}
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *run) patch(data []byte, pt types.PatchType) {
	s.t.Helper()
	d, err := s.cs.AppsV1().Deployments(s.ns).Patch(s.ctx, "web", pt, data, metav1.PatchOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.gen = d.Generation
}

func (s *run) owned(d *appsv1.Deployment) []*appsv1.ReplicaSet {
	s.t.Helper()
	l, err := s.cs.AppsV1().ReplicaSets(s.ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range l.Items {
		if metav1.IsControlledBy(&l.Items[i], d) {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// waitComplete waits until "web" has rolled out and its old ReplicaSets
// have no pods left, and returns when that was first observed.
func (s *run) waitComplete() time.Time {
	s.t.Helper()
	at, err := s.rec.WaitFor(s.ctx, 2*time.Minute, func(snap cluster.Snapshot) bool {
		d := snap.Deployments["web"]
		if d == nil || d.Generation < s.gen || !cluster.Complete(d) {
			return false
		}
		for _, rs := range snap.ReplicaSets {
			if rs.Status.Replicas != *rs.Spec.Replicas || rs.Status.ObservedGeneration < rs.Generation {
				return false
			}
		}
		return true
	})
	if err != nil {
		s.t.Fatalf("%s: %v", s.ns, err)
	}
	return at
}

// execute runs sc in s. writes is called before act and after the
// converged state has settled, and returns cumulative write counts of the
// controllers under test; countsHarness says that they include the
// harness's own writes, which are then subtracted.
func (s *run) execute(sc scenario, writes func() map[kube.Request]int, countsHarness bool) result {
	s.t.Helper()
	defer observe(s.ctx, s.rec, s.cs, s.ns)()
	if sc.setup != nil {
		sc.setup(s)
		time.Sleep(time.Second) // let trailing writes of the setup land
	}
	before, harnessBefore := writes(), s.harness.Counts()
	start := time.Now()
	sc.act(s)
	done := s.waitComplete()
	time.Sleep(2 * time.Second) // trailing writes (e.g. history cleanup, events)
	after, harnessAfter := writes(), s.harness.Counts()
	w := diff(after, before)
	if countsHarness {
		// The apiserver's counters include the harness's own writes.
		for r, n := range diff(harnessAfter, harnessBefore) {
			if w[r] -= n; w[r] <= 0 {
				delete(w, r)
			}
		}
	}
	return result{converge: done.Sub(start), writes: w, entries: s.rec.Since(start), final: s.finalState()}
}

// observe starts rec, waits until it has listed, and starts the simulated
// kubelet of namespace ns; the returned stop ends both and waits for them.
func observe(ctx context.Context, rec *cluster.Recorder, cs kubernetes.Interface, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() { rec.Run(ctx, ready) })
	<-ready
	kubelet := &cluster.Kubelet{Client: cs, Namespace: ns, ReadyDelay: readyDelay}
	wg.Go(func() { _ = kubelet.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

func diff(after, before map[kube.Request]int) map[kube.Request]int {
	out := make(map[kube.Request]int)
	for r, n := range after {
		if (r.IsWrite() || strings.HasPrefix(r.Verb, "conflict(")) && n-before[r] > 0 {
			out[r] = n - before[r]
		}
	}
	return out
}

// controllerResources are the resources the two controllers write.
func controllerResource(r kube.Request) bool {
	res, _, _ := strings.Cut(r.Resource, "/")
	switch res {
	case "deployments", "replicasets", "pods", "events":
		return true
	}
	return false
}

func total(w map[kube.Request]int, pred func(kube.Request) bool) int {
	n := 0
	for r, c := range w {
		if pred(r) {
			n += c
		}
	}
	return n
}

func summarize(w map[kube.Request]int) string {
	var parts []string
	for _, r := range kube.SortedRequests(w) {
		parts = append(parts, fmt.Sprintf("%s %d", r, w[r]))
	}
	return strings.Join(parts, ", ")
}
