package deployment_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// stepInterval is how much simulated time passes between syncs.
const stepInterval = 10 * time.Second

// harness drives a golden trace: each step prints the world and the plan
// Sync decides, applies the plan to the world with WritePlan, lets the world
// settle (every ReplicaSet gets its spec.replicas pods, available at once
// unless their image is the unhealthy one) and advances the clock.
type harness struct {
	t    *testing.T
	w    *world
	key  types.NamespacedName
	out  strings.Builder
	step int
}

func newHarness(t *testing.T, d *appsv1.Deployment) *harness {
	w := newWorld()
	d = w.addDeployment(d)
	return &harness{t: t, w: w, key: deployment.KeyOf(d)}
}

// note writes a comment line to the trace.
func (h *harness) note(format string, args ...any) {
	fmt.Fprintf(&h.out, "\n# "+format+"\n", args...)
}

// edit changes the Deployment as a user would, and notes it.
func (h *harness) edit(what string, f func(d *appsv1.Deployment)) {
	h.note("user: %s", what)
	h.w.edit(h.key, f)
}

// state reads the snapshot the Reconciler would read.
func (h *harness) state() deployment.State {
	h.t.Helper()
	return snapshot(h.t, h.w, h.key)
}

func snapshot(t testing.TB, w *world, key types.NamespacedName) deployment.State {
	t.Helper()
	d, err := w.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := w.List(key.Namespace, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	s := deployment.State{Deployment: d, ReplicaSets: rss}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		s.Pods = map[types.UID][]*corev1.Pod{}
		for _, rs := range rss {
			pods, err := w.ByIndex(informer.IndexControllerUID, string(rs.UID))
			if err != nil {
				t.Fatal(err)
			}
			s.Pods[rs.UID] = pods
		}
	}
	return s
}

// sync runs one step and returns its plan.
func (h *harness) sync() deployment.Plan {
	h.t.Helper()
	h.step++
	fmt.Fprintf(&h.out, "\n--- step %d (t=+%s)\nworld:\n%s", h.step, h.w.now.Sub(t0), h.w.describe(h.key))
	plan, err := deployment.Sync(h.state(), h.w.now)
	if err != nil {
		fmt.Fprintf(&h.out, "sync error: %v\n", err)
		return plan
	}
	fmt.Fprintf(&h.out, "plan:\n%s", indent(plan.String()))
	if _, err := deployment.WritePlan(context.Background(), h.w, h.w, plan); err != nil {
		fmt.Fprintf(&h.out, "apply error: %v\n", err)
	}
	h.w.settle()
	h.w.now = h.w.now.Add(stepInterval)
	return plan
}

// converge syncs until a plan writes nothing (at most max steps) and
// returns that last plan.
func (h *harness) converge(max int) deployment.Plan {
	h.t.Helper()
	for i := 0; i < max; i++ {
		if p := h.sync(); !p.HasWrites() {
			return p
		}
	}
	h.t.Fatalf("no fixed point after %d steps", max)
	return deployment.Plan{}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// check compares the trace with testdata/<name>.txt.
func (h *harness) check(name string) {
	h.t.Helper()
	golden.Check(h.t, "testdata/"+name+".txt", strings.TrimPrefix(h.out.String(), "\n"), *update)
}
