//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/plugin"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
)

// TestWhyScenarios reproduces stuck rollouts on the real apiserver, with
// ctrlkit's controllers and a kubelet that reports faults as a real one
// does, and checks that `kubectl ctrlkit why` names the right causes:
// recall is the share of expected causes named, precision the share of
// named causes that were expected.
func TestWhyScenarios(t *testing.T) {
	runWhyCases(t, "kubectl ctrlkit why", whyCases(), envOptions{})
}

// whyTally sums the cases' recall and precision for the report.
type whyTally struct {
	mu                              sync.Mutex
	rows                            []string
	expected, found, named, correct int
}

// runWhyCases runs cases in parallel subtests, on environments made with
// o, and reports the tally under title.
func runWhyCases(t *testing.T, title string, cases []whyCase, o envOptions) {
	var tally whyTally
	t.Cleanup(func() {
		sort.Strings(tally.rows)
		var b strings.Builder
		fmt.Fprintf(&b, "%s on %d scenarios: recall %d/%d = %.2f, precision %d/%d = %.2f\n", title,
			len(tally.rows), tally.found, tally.expected, ratio(tally.found, tally.expected), tally.correct, tally.named, ratio(tally.correct, tally.named))
		for _, r := range tally.rows {
			b.WriteString(r)
		}
		report(t, b.String())
	})
	for _, wc := range cases {
		t.Run(testName(wc.name), func(t *testing.T) {
			t.Parallel()
			runWhyCase(t, wc, o, &tally)
		})
	}
}

// runWhyCase reproduces one case and checks why's report on it.
func runWhyCase(t *testing.T, wc whyCase, o envOptions, tally *whyTally) {
	o.faults = func(p *corev1.Pod) simkubelet.Fault {
		if f, ok := wc.faults[p.Spec.Containers[0].Image]; ok {
			return f
		}
		if strings.HasPrefix(p.Spec.Containers[0].Image, "registry.example.com/") {
			return simkubelet.PrivateImage // its registry wants credentials
		}
		return simkubelet.Healthy
	}
	o.readyDelay = 200 * time.Millisecond
	o.noOperator = o.noOperator || wc.binary
	e := newEnv(t, o)
	if wc.binary {
		bin, err := controllerBinary()
		if err != nil {
			t.Fatal(err)
		}
		e.ctrl = startBinary(t, bin, e.ns)
	}
	d := deployment("web", 3, "app:1")
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(1))
	if wc.base != nil {
		wc.base(d)
	}
	e.create(d)
	e.waitComplete("web", 30*time.Second)
	setup := wc.setup
	if setup == nil {
		setup = toApp2
	}
	setup(e)
	args := append([]string{"--terminating-after", "1s", "--unscheduled-after", "1m", "--controller-lease", e.ns + "/ctrlkit-controller"}, wc.args...)
	var each func(plugin.WhyReport)
	if wc.each != nil {
		each = func(r plugin.WhyReport) { wc.each(t, r) }
	}
	// Until the report names exactly the causes wanted: a cause that is
	// true for a moment and then goes (a pod deleted by the scenario still
	// there 1 s past its grace period while the simulated kubelet catches
	// up on a loaded machine: StuckTerminating) is logged, and fails the
	// case only if it is still there at the deadline.
	code, r := e.waitWhyUntil("web", func(r plugin.WhyReport) bool {
		return r.State == wc.state && hasAll(r.Causes, wc.want) && hasOnly(r.Causes, wc.want)
	}, 45*time.Second, each, args...)
	got := map[plugin.CauseCode]bool{}
	for _, c := range r.Causes {
		got[c.Code] = true
	}
	wanted := map[plugin.CauseCode]bool{}
	for _, w := range wc.want {
		wanted[w] = true
	}
	var hit, ok int
	var missing, extra []string
	for w := range wanted {
		if got[w] {
			hit++
		} else {
			missing = append(missing, string(w))
		}
	}
	for g := range got {
		if wanted[g] {
			ok++
		} else {
			extra = append(extra, string(g))
		}
	}
	wantCode := plugin.ExitOK
	if wc.state == plugin.Stuck || wc.state == plugin.Deleting {
		wantCode = plugin.ExitStuck
	}
	_, text, _ := e.kubectlCtrlkit(append([]string{"why", "deploy/web", "-n", e.ns}, args...)...)
	if len(missing) > 0 || len(extra) > 0 || r.State != wc.state || code != wantCode {
		t.Errorf("why: exit %d, state %s, missing %v, unexpected %v; want exit %d, state %s\n%s", code, r.State, missing, extra, wantCode, wc.state, text)
	}
	if (r.State == plugin.Stuck || r.State == plugin.Deleting) && !strings.Contains(text, "\nTo unblock:\n") {
		t.Errorf("a %s report without a To unblock section:\n%s", r.State, text)
	}
	if wc.check != nil {
		wc.check(t, e, r, text)
	}
	if wc.show {
		report(t, "$ kubectl ctrlkit why deploy/web\n"+text)
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.expected, tally.found, tally.named, tally.correct = tally.expected+len(wanted), tally.found+hit, tally.named+len(got), tally.correct+ok
	tally.rows = append(tally.rows, fmt.Sprintf("  %-45s exit %d %-11s named %v\n", wc.name, code, r.State, codesOf(r.Causes)))
}

// TestWhyUpstream runs the cases marked upstream with
// kube-controller-manager's Deployment and ReplicaSet controllers (and
// its garbage collector and quota controller), on a control plane of its
// own: they act on every namespace, and ours run next to the other tests.
func TestWhyUpstream(t *testing.T) {
	ctx := context.Background()
	up, err := cluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := up.Stop(); err != nil {
			t.Log(err)
		}
	})
	if err := up.StartKCM(ctx, "deployment-controller,replicaset-controller,garbage-collector-controller,resourcequota-controller"); err != nil {
		t.Fatal(err)
	}
	var cases []whyCase
	for _, wc := range whyCases() {
		if wc.upstream {
			cases = append(cases, wc)
		}
	}
	runWhyCases(t, "kubectl ctrlkit why with kube-controller-manager's controllers", cases, envOptions{cp: up, noOperator: true})
}

// causeOf returns r's cause of code (the zero Cause if none).
func causeOf(r plugin.WhyReport, code plugin.CauseCode) plugin.Cause {
	for _, c := range r.Causes {
		if c.Code == code {
			return c
		}
	}
	return plugin.Cause{}
}

// planFitsQuota checks that plan, for an update to app:2, reads the
// namespace's quota of pods pods: never more pods than that, some
// creations refused on the way, and the rollout completes.
func (e *env) planFitsQuota(pods int32) {
	e.t.Helper()
	code, out, errOut := e.kubectlCtrlkit("plan", "deploy/web", "-n", e.ns, "--image", "app:2", "-o", "json")
	var p plugin.PlanReport
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != plugin.ExitOK {
		e.t.Fatalf("plan: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if !p.Complete || p.PeakPods > pods || p.Refused == 0 || len(p.Quotas) != 1 {
		e.t.Errorf("plan with a quota of %d pods: complete %t, peak %d pods, %d waits for room, quotas %+v", pods, p.Complete, p.PeakPods, p.Refused, p.Quotas)
	}
	report(e.t, fmt.Sprintf("plan with a quota of %d pods (%s): complete after %s, peak %d pods, %d waits for room\n", pods, e.side, p.Duration, p.PeakPods, p.Refused))
}
