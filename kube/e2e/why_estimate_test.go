//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/plugin"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	corev1 "k8s.io/api/core/v1"
)

// TestWhyEstimate: on a slow healthy rollout (minReadySeconds), `why`
// mid-way and `plan` before it agree on when it completes, within 10% of
// the planned duration: plan predicts the whole rollout from the state
// before the update; why, once two new pods are up, plans the rest from
// the live state, the pods in flight included. Both are compared as
// times: plan's from the update, why's from when it read the state.
func TestWhyEstimate(t *testing.T) {
	healthy := func(*corev1.Pod) simkubelet.Fault { return simkubelet.Healthy }
	e := newEnv(t, envOptions{readyDelay: time.Second, faults: healthy})
	d := rolling(deployment("web", 3, "app:1"), intstr.FromInt(1), intstr.FromInt(0))
	d.Spec.MinReadySeconds = 6
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(1))
	e.create(d)
	e.waitComplete("web", time.Minute)

	code, out, errOut := kubectlCtrlkit(t, "plan", "deploy/web", "-n", e.ns, "--image", "app:2", "-o", "json")
	var p plugin.PlanReport
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != plugin.ExitOK || !p.Complete {
		t.Fatalf("plan: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	start := time.Now()
	e.update("web", setImage("app:2"))
	planned := start.Add(time.Duration(p.Duration))

	e.waitFor("two new pods", time.Minute, func(s cluster.Snapshot) bool {
		d := s.Deployments["web"]
		return d != nil && d.Status.ObservedGeneration >= e.gens["web"] && d.Status.UpdatedReplicas >= 2
	})
	asked := time.Now()
	code, r := e.why("web")
	if code != plugin.ExitOK || r.State != plugin.Progressing || r.Estimate == nil || !r.Estimate.Complete {
		t.Fatalf("why mid-way: exit %d, state %s, estimate %+v", code, r.State, r.Estimate)
	}
	// The estimate is from the state as why read it, which under load is
	// a while after asked (a process starts, lists, plans): its own At is
	// that reading's time plus Remaining.
	estimated := r.Estimate.At
	if estimated.IsZero() {
		t.Fatalf("why mid-way: an estimate without its time: %+v", r.Estimate)
	}
	end := e.waitComplete("web", 2*time.Minute)

	off := math.Abs(estimated.Sub(planned).Seconds()) / time.Duration(p.Duration).Seconds()
	report(t, fmt.Sprintf("kubectl ctrlkit why vs plan on a slow healthy rollout (3 replicas, 1/0, minReadySeconds 6, Ready after 1s):\n"+
		"  plan before the update: complete after %s\n"+
		"  why at +%s: completes in %s, i.e. at +%s (%.1f%% of the planned duration from plan's)\n"+
		"  actual: complete at +%s\n",
		p.Duration, asked.Sub(start).Round(10*time.Millisecond), r.Estimate.Remaining, estimated.Sub(start).Round(10*time.Millisecond), 100*off,
		end.Sub(start).Round(10*time.Millisecond)))
	if off > 0.10 {
		t.Errorf("why's completion (+%s) and plan's (+%s) differ by %.1f%% of the planned %s; want ≤ 10%%",
			estimated.Sub(start), planned.Sub(start), 100*off, p.Duration)
	}
}
