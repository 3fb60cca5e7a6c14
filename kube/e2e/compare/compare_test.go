//go:build e2e

package compare

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var cp *cluster.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		var err error
		if cp, err = cluster.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
		return m.Run()
	}())
}

// finalState is what must be identical after a scenario, ours or upstream.
type finalState struct {
	ReplicaSets map[string]rsState
	Deployment  dState
}

type rsState struct {
	Replicas    int32
	Image       string
	Annotations map[string]string
	Controller  string
}

type dState struct {
	Status      string
	Annotations map[string]string
	Conditions  []string // type=status/reason: message
}

func (s *run) finalState() finalState {
	d := s.get()
	out := finalState{ReplicaSets: map[string]rsState{}}
	for _, rs := range s.owned(d) {
		ctl := ""
		if ref := metav1.GetControllerOf(rs); ref != nil {
			ctl = ref.Kind + "/" + ref.Name
		}
		out.ReplicaSets[rs.Name] = rsState{Replicas: *rs.Spec.Replicas, Image: rs.Spec.Template.Spec.Containers[0].Image,
			Annotations: rs.Annotations, Controller: ctl}
	}
	st := d.Status
	out.Deployment.Status = fmt.Sprintf("observed=%d replicas=%d updated=%d ready=%d available=%d unavailable=%d collisions=%v",
		st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas, st.CollisionCount)
	out.Deployment.Annotations = d.Annotations
	for _, c := range st.Conditions {
		out.Deployment.Conditions = append(out.Deployment.Conditions, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

// TestSideBySide runs every scenario first with the upstream
// kube-controller-manager, then with ctrlkit's controllers, each in a fresh
// namespace of the same control plane, and compares.
func TestSideBySide(t *testing.T) {
	ctx := context.Background()
	upstream := map[string]result{}

	// Upstream: kube-controller-manager's own controllers, cluster-wide.
	if err := cp.StartKCM(ctx, "deployment-controller,replicaset-controller,garbage-collector-controller"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // informers synced
	apiserverWrites := func() map[kube.Request]int { return apiserverControllerWrites(t, ctx) }
	selected := func(sc scenario) bool {
		f := os.Getenv("CTRLKIT_E2E_SCENARIO")
		return f == "" || strings.Contains(sc.name, f)
	}
	for i, sc := range scenarios {
		if !selected(sc) {
			continue
		}
		s := newRun(t, ctx, fmt.Sprintf("upstream-%d", i))
		upstream[sc.name] = s.execute(sc, apiserverWrites, true)
	}
	if err := cp.StopKCM(ctx); err != nil {
		t.Fatal(err)
	}

	// Ours: kube.Operator in-process, scoped to the scenario's namespace,
	// once syncing on every event like upstream and once with a batch
	// period (CTRLKIT_E2E_BATCH, default 100ms; 0 skips that run).
	var rows []string
	for i, sc := range scenarios {
		if !selected(sc) {
			continue
		}
		for _, batch := range batchPeriods(t) {
			name, ns := sc.name, fmt.Sprintf("ctrlkit-%d", i)
			if batch > 0 {
				name, ns = fmt.Sprintf("%s (batch %v)", sc.name, batch), fmt.Sprintf("ctrlkit-batch-%d", i)
			}
			ours := runOurs(t, ctx, ns, sc, batch)
			up := upstream[sc.name]
			rows = append(rows, row(name, ours, up))
			t.Run(name, func(t *testing.T) { compareRuns(t, ours, up) })
		}
	}
	// Ours again, as the controller-runtime operator of the examples: a
	// Manager with its cache restricted to the namespace, in a process of
	// its own. Same scenarios, same final state, no expectation stalls.
	if bin := buildCROperator(t); bin != "" {
		for i, sc := range scenarios {
			if !selected(sc) {
				continue
			}
			name := sc.name + " (controller-runtime)"
			cr := runCROperator(t, ctx, bin, fmt.Sprintf("cr-%d", i), sc, apiserverWrites)
			up := upstream[sc.name]
			rows = append(rows, row(name, cr, up))
			t.Run(name, func(t *testing.T) {
				compareRuns(t, cr, up)
				// A missed expectation observation waits out the 5-minute
				// expectations timeout; a step here takes seconds.
				if limit := up.converge + 30*time.Second; cr.converge > limit {
					t.Errorf("converged in %v, upstream in %v: a stall", cr.converge, up.converge)
				}
			})
		}
	}
	report(t, rows)
}

// runOurs runs sc in namespace ns with kube.Operator in-process.
func runOurs(t *testing.T, ctx context.Context, ns string, sc scenario, batch time.Duration) result {
	s := newRun(t, ctx, ns)
	m, err := kube.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	op := &kube.Operator{Config: cp.Config(20, 30), Namespace: ns, Metrics: m, BatchPeriod: batch}
	opCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := op.Run(opCtx); err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	ourWrites := func() map[kube.Request]int {
		c := m.Requests.Counts()
		for r, v := range m.Requests.Conflicts() {
			c[kube.Request{Verb: "conflict(" + r.Verb + ")", Resource: r.Resource}] = v
		}
		return c
	}
	ours := s.execute(sc, ourWrites, false)
	stop()
	wg.Wait()
	mb := httptest.NewRecorder()
	m.ServeHTTP(mb, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, l := range strings.Split(mb.Body.String(), "\n") {
		if strings.HasPrefix(l, "ctrlkit_syncs_total") || strings.HasPrefix(l, "workqueue_retries_total") {
			t.Logf("%s (batch %v): %s", sc.name, batch, l)
		}
	}
	return ours
}

func compareRuns(t *testing.T, ours, up result) {
	if os.Getenv("CTRLKIT_E2E_TRACE") != "" {
		for name, r := range map[string]result{"upstream": up, "ours": ours} {
			start := r.entries[0].At
			for _, e := range r.entries {
				t.Logf("%s %6.3fs %v", name, e.At.Sub(start).Seconds(), e)
			}
		}
	}
	if diff := cmp.Diff(up.final, ours.final); diff != "" {
		t.Errorf("final state differs (-upstream +ours):\n%s", diff)
	}
	if diff := cmp.Diff(cluster.SpecSequences(up.entries), cluster.SpecSequences(ours.entries)); diff != "" {
		t.Logf("ReplicaSet size sequences differ (-upstream +ours):\n%s", diff)
	}
	t.Logf("ours:     %v, %d writes: %s", ours.converge.Round(time.Millisecond), total(ours.writes, kube.Request.IsWrite), summarize(ours.writes))
	t.Logf("upstream: %v, %d writes: %s", up.converge.Round(time.Millisecond), total(up.writes, kube.Request.IsWrite), summarize(up.writes))
}

func isEvent(r kube.Request) bool    { return r.IsWrite() && r.Resource == "events" }
func notEvent(r kube.Request) bool   { return r.IsWrite() && r.Resource != "events" }
func isConflict(r kube.Request) bool { return strings.HasPrefix(r.Verb, "conflict(") }
func isDStatus(r kube.Request) bool {
	return r.IsWrite() && r.Resource == "deployments/status"
}

func row(name string, ours, up result) string {
	same := "yes"
	if !cmp.Equal(up.final, ours.final) {
		same = "**no**"
	}
	seq := "yes"
	if !cmp.Equal(cluster.SpecSequences(up.entries), cluster.SpecSequences(ours.entries)) {
		seq = "no"
	}
	ratio := "–"
	if n := total(up.writes, notEvent); n > 0 {
		ratio = fmt.Sprintf("%.2f", float64(total(ours.writes, notEvent))/float64(n))
	}
	return fmt.Sprintf("| %s | %.2f s | %.2f s | %d (%d; %d) | %d (%d; %d) | %s | %d | %d | %s | %s |", name,
		ours.converge.Seconds(), up.converge.Seconds(),
		total(ours.writes, notEvent), total(ours.writes, isDStatus), total(ours.writes, isConflict),
		total(up.writes, notEvent), total(up.writes, isDStatus), total(up.writes, isConflict), ratio,
		total(ours.writes, isEvent), total(up.writes, isEvent), same, seq)
}

func report(t *testing.T, rows []string) {
	var b strings.Builder
	b.WriteString("| scenario | converge ours | converge upstream | writes ours (deploy status; 409s) | writes upstream (deploy status; 409s) | ratio | events ours | events upstream | same final state | same RS size sequence |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	t.Log("\n" + b.String())
	if path := os.Getenv("CTRLKIT_E2E_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// batchPeriods are the BatchPeriods ours runs with: 0, and
// CTRLKIT_E2E_BATCH (a duration, default 100ms) unless that is 0.
func batchPeriods(t *testing.T) []time.Duration {
	d := 100 * time.Millisecond
	if s := os.Getenv("CTRLKIT_E2E_BATCH"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("CTRLKIT_E2E_BATCH=%q: %v", s, err)
		}
	}
	if d <= 0 {
		return []time.Duration{0}
	}
	return []time.Duration{0, d}
}

// batchPeriod is CTRLKIT_E2E_BATCH, or 0 when it is unset.
func batchPeriod(t *testing.T) time.Duration {
	s := os.Getenv("CTRLKIT_E2E_BATCH")
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("CTRLKIT_E2E_BATCH=%q: %v", s, err)
	}
	return d
}
