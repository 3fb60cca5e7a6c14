//go:build e2e

package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// commandFailed extracts what kube-controller-manager (and
// ctrlkit-controller) log when the command line is refused:
// `"command failed" err="..."`.
var commandFailed = regexp.MustCompile(`"command failed" err="((?:[^"\\]|\\.)*)"`)

// exitOf runs bin with args and returns its exit status and the error it
// logged.
func exitOf(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	m := commandFailed.FindStringSubmatch(stderr.String())
	if m == nil {
		return code, "(no \"command failed\" line) " + stderr.String()
	}
	return code, m[1]
}

// TestFeatureGatesFlag runs ctrlkit-controller and kube-controller-manager
// v1.37.1 with the same bad --feature-gates values: both exit 1 with the
// same logged error. Where kube-controller-manager knows more gates than
// this program (the other controllers' gates that also depend on
// AtomicFIFO), its error lists them too, and ours is part of it.
func TestFeatureGatesFlag(t *testing.T) {
	bin, err := exec.Command("bash", cluster.Script(), "bin").Output()
	if err != nil {
		t.Fatalf("controlplane.sh bin: %v", err)
	}
	kcmBin := filepath.Join(strings.TrimSpace(string(bin)), "kube-controller-manager")
	for _, tc := range []struct {
		value    string
		contains bool // kube-controller-manager's error contains ours
	}{
		{value: "PodDeletionCost=false,Foo=true"},
		{value: "InOrderInformers=false"},
		{value: "PodDeletionCost=maybe"},
		{value: "LogarithmicScaleDown=true"},
		{value: "StaleControllerConsistencyReplicaSet=true,AtomicFIFO=false", contains: true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			arg := "--feature-gates=" + tc.value
			kCode, kErr := exitOf(t, kcmBin, arg)
			cCode, cErr := exitOf(t, ctrlkitBin, arg)
			t.Logf("kube-controller-manager: exit %d, %s", kCode, kErr)
			t.Logf("ctrlkit-controller:      exit %d, %s", cCode, cErr)
			if cCode != kCode || kCode != 1 {
				t.Errorf("exit status: ctrlkit-controller %d, kube-controller-manager %d; want both 1", cCode, kCode)
			}
			switch {
			case tc.contains && !strings.Contains(kErr, cErr):
				t.Errorf("ctrlkit-controller's error %q is not part of kube-controller-manager's %q", cErr, kErr)
			case !tc.contains && cErr != kErr:
				t.Errorf("errors differ:\nkube-controller-manager: %s\nctrlkit-controller:      %s", kErr, cErr)
			}
		})
	}
}

// allGatesOff switches off every gate the two controllers consult.
const allGatesOff = "--feature-gates=DeploymentReplicaSetTerminatingReplicas=false,PodDeletionCost=false,StaleControllerConsistencyReplicaSet=false"

// TestFeatureGatesOff runs the suite's rollout (50 Deployments from app:1
// to app:2) with ctrlkit-controller and with kube-controller-manager,
// both started with every gate the two controllers consult off; then,
// still with the gates off, a ReplicaSet of 2 pods, the older one with
// the lower pod-deletion-cost, scaled down to 1. The final states are
// identical: no terminatingReplicas anywhere, and the same pod kept (the
// older, whose cost the ranking ignores).
func TestFeatureGatesOff(t *testing.T) {
	type outcome struct {
		final map[string]dState
		kept  string
	}
	got := map[side]outcome{}
	for _, s := range []side{ctrlkit, kcm} {
		t.Run(string(s), func(t *testing.T) {
			r := newRun(t, s, "gatesoff", 0)
			r.flags = []string{allGatesOff}
			r.controller("a", "", false)
			r.setup()
			r.change()
			res := r.finish("gatesoff")
			t.Logf("%s", describe(res))
			kept := r.deletionCost()
			for name, d := range res.final {
				if !strings.Contains(d.Status, "terminating=nil") {
					r.problem("deploy/%s: %s; want no terminatingReplicas with the gate off", name, d.Status)
				}
				for rs, st := range d.ReplicaSets {
					if !strings.Contains(st, "terminating=nil") {
						r.problem("rs/%s: %s; want no terminatingReplicas with the gate off", rs, st)
					}
				}
			}
			got[s] = outcome{final: res.final, kept: kept}
		})
	}
	a, b := got[ctrlkit], got[kcm]
	if a.final == nil || b.final == nil {
		return
	}
	if diff := cmp.Diff(b.final, a.final); diff != "" {
		t.Errorf("final states with every gate off differ (-kube-controller-manager +ctrlkit):\n%s", diff)
	}
	if a.kept != b.kept {
		t.Errorf("after the scale-down with PodDeletionCost off: ctrlkit kept the %s pod, kube-controller-manager the %s one", a.kept, b.kept)
	}
	t.Logf("kept after the scale-down with PodDeletionCost off: ctrlkit %s, kube-controller-manager %s", a.kept, b.kept)
}

// deletionCost creates Deployment "cost" with one pod, waits long enough
// for a second pod to fall in another log-scaled age bucket of the
// deletion ranking, gives the first pod a pod-deletion-cost of -1000 and
// the second 1000, scales down to 1 and returns which pod was kept:
// "older" (the ranking ignored the costs) or "newer" (it honoured them).
func (r *run) deletionCost() string {
	r.t.Helper()
	const name = "cost"
	d := newDeployment(0, "app:1")
	d.Name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels = name, map[string]string{"app": name}, map[string]string{"app": name}
	one := int32(1)
	d.Spec.Replicas = &one
	if _, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, d, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	ready := func(n int) []corev1.Pod {
		var pods []corev1.Pod
		r.poll(fmt.Sprintf("%d ready pods of %s", n, name), func() bool {
			l, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				return false
			}
			pods = pods[:0]
			for _, p := range l.Items {
				if p.DeletionTimestamp == nil && podReadyStatus(&p) {
					pods = append(pods, p)
				}
			}
			return len(pods) == n
		})
		return pods
	}
	older := ready(1)[0]
	// A second pod ready well after the first: their ages since ready
	// fall in different log2 buckets (≥ 32 s against ≤ 8 s).
	time.Sleep(40 * time.Second) // an age for the ranking, not a synchronisation
	r.scaleTo(name, 2)
	var newer corev1.Pod
	for _, p := range ready(2) {
		if p.UID != older.UID {
			newer = p
		}
	}
	r.annotateCost(older.Name, "-1000")
	r.annotateCost(newer.Name, "1000")
	r.scaleTo(name, 1)
	kept := ready(1)[0]
	switch kept.UID {
	case older.UID:
		return "older"
	case newer.UID:
		return "newer"
	}
	return "unknown " + kept.Name
}

func (r *run) scaleTo(name string, n int32) {
	r.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := r.cs.AppsV1().Deployments(r.ns).Patch(r.ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *run) annotateCost(pod, cost string) {
	r.t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":%q}}}`, cost)
	if _, err := r.cs.CoreV1().Pods(r.ns).Patch(r.ctx, pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

func podReadyStatus(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rejectedFor is how long TestRejectedPods lets each side run.
const rejectedFor = 30 * time.Second

// TestRejectedPods is kubernetes#72593 on a real kube-apiserver: a
// Deployment of 3 replicas whose pods the kubelet rejects (OutOfcpu:
// simkubelet's FaultKubelet answers as a real one, a Failed status and a
// Warning event). kube-controller-manager replaces each at once, as fast as the
// kubelet rejects them; ctrlkit-controller replaces the first at once and
// backs off (10 s doubling, one pod at a time), with a RejectedPodsBackoff
// event that names the kubelet's reason. The pods created in 30 s, and
// the rate, are reported beside each other.
func TestRejectedPods(t *testing.T) {
	const msg = "Node didn't have enough resource: cpu"
	counts := map[side]int{}
	for _, s := range []side{ctrlkit, kcm} {
		t.Run(string(s), func(t *testing.T) {
			r := newRunWith(t, s, "rejected", 0, func(p *corev1.Pod) simkubelet.Fault {
				if p.Spec.Containers[0].Image == "app:toobig" {
					return simkubelet.OutOfCPU
				}
				return simkubelet.Healthy
			})
			r.controller("a", "", false)
			d := newDeployment(0, "app:toobig")
			d.Name = "toobig"
			three := int32(3)
			d.Spec.Replicas = &three
			start := time.Now()
			if _, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(rejectedFor) // the measurement window, not a synchronisation
			for _, p := range r.procs {
				p.Kill()
			}
			elapsed := time.Since(start)
			pods, err := r.cs.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "OutOfcpu" {
					failed++
				}
			}
			counts[s] = len(pods.Items)
			t.Logf("%s: %d pods created in %.0f s (%.0f a minute), %d of them rejected so far", s, len(pods.Items), elapsed.Seconds(),
				float64(len(pods.Items))/elapsed.Minutes(), failed)
			if s != ctrlkit {
				return
			}
			// 3 at once and the first replacement at once; then one pod
			// 10 s after the latest of 2 rejections, 20 s after the
			// latest of 3, ...: within 30 s, 6 or 7 at most, depending
			// on how the kubelet's rejections interleave with the syncs
			// (measured: 4 and 6).
			if len(pods.Items) > 8 {
				t.Errorf("ctrlkit-controller created %d pods in %v for 3 replicas rejected by the kubelet; want at most 8", len(pods.Items), rejectedFor)
			}
			evs, err := r.cs.CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var backoff string
			for _, e := range evs.Items {
				if e.Reason == "RejectedPodsBackoff" && e.InvolvedObject.Kind == "ReplicaSet" {
					backoff = e.Message
				}
			}
			if !strings.Contains(backoff, "OutOfcpu: Pod was rejected: "+msg) {
				t.Errorf("no RejectedPodsBackoff event naming the kubelet's reason (got %q)", backoff)
			}
		})
	}
	t.Logf("pods created in %v for 3 replicas the kubelet rejects: ctrlkit-controller %d, kube-controller-manager %d", rejectedFor, counts[ctrlkit], counts[kcm])
	reportLine(t, fmt.Sprintf("| kubelet rejects every pod (OutOfcpu), %v | %d pods | %d pods |", rejectedFor, counts[ctrlkit], counts[kcm]))
}

// TestExpiredExpectations is kubernetes#129795 on a real kube-apiserver:
// a Deployment of 3 is scaled to 5 while the controllers' pod watch lags 6
// minutes (their other watches do not), more than the 5-minute TTL of the
// ReplicaSet controller's expectations; at 5.5 minutes the ReplicaSet is
// touched (an annotation), so that the controller syncs it after the
// expiry, its pod cache still without the 2 pods it created. It takes 3
// runs of about 8 minutes, so it runs only with CTRLKIT_FAULT_LONG=1:
// ctrlkit-controller, kube-controller-manager (whose
// StaleControllerConsistencyReplicaSet, on in v1.37, waits for its pod
// informer to reach the resource versions of the pods it created), and
// kube-controller-manager with that gate off (it trusts the expired
// expectation). The pods created beyond the 5 needed are reported.
func TestExpiredExpectations(t *testing.T) {
	if os.Getenv("CTRLKIT_FAULT_LONG") != "1" {
		t.Skip("about 25 minutes: set CTRLKIT_FAULT_LONG=1")
	}
	const lag = 6 * time.Minute
	extra := map[string]int{}
	for _, c := range []struct {
		name  string
		side  side
		flags []string
	}{
		{"ctrlkit-controller", ctrlkit, nil},
		{"kube-controller-manager", kcm, nil},
		{"kube-controller-manager, StaleControllerConsistencyReplicaSet=false", kcm, []string{"--feature-gates=StaleControllerConsistencyReplicaSet=false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, c.side, "expiry", 0)
			r.flags = c.flags
			px := r.proxy("p")
			r.controller("a", px.Kubeconfig(), false)
			d := newDeployment(0, "app:1")
			d.Name = "lagged"
			n := int32(3)
			d.Spec.Replicas = &n
			if _, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r.readyPods("lagged", 3, deadline)
			px.SetFaults(cluster.ProxyFaults{WatchLag: lag, WatchLagResource: "pods"})
			start := time.Now()
			r.scaleTo("lagged", 5)
			time.Sleep(5*time.Minute + 30*time.Second) // past the TTL: the measurement window
			r.touchReplicaSets()
			time.Sleep(time.Until(start.Add(lag + time.Minute)))
			px.SetFaults(cluster.ProxyFaults{})
			r.readyPods("lagged", 5, 2*lag)
			created := 0
			for _, p := range r.rec.PodRecords() {
				if strings.HasPrefix(p.Owner, "lagged-") {
					created++
				}
			}
			extra[c.name] = created - 5
			t.Logf("%s: %d pods created for 3 then 5 replicas: %d extra", c.name, created, created-5)
			if c.side == ctrlkit && created != 5 {
				t.Errorf("%d pods created: %d extra after the expectations expired", created, created-5)
			}
		})
	}
	reportLine(t, fmt.Sprintf("| pod watch 6 min late over a scale 3 → 5 (extra pods) | %d | %d (%d with StaleControllerConsistencyReplicaSet=false) |",
		extra["ctrlkit-controller"], extra["kube-controller-manager"], extra["kube-controller-manager, StaleControllerConsistencyReplicaSet=false"]))
}

// touchReplicaSets annotates every ReplicaSet of the run's namespace (a
// watch event for the controllers, and a sync).
func (r *run) touchReplicaSets() {
	r.t.Helper()
	rss, err := r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rs := range rss.Items {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"e2e.ctrlkit.io/touched":%q}}}`, time.Now().Format(time.RFC3339Nano))
		if _, err := r.cs.AppsV1().ReplicaSets(r.ns).Patch(r.ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// readyPods waits until Deployment name has n ready pods and no others
// running.
func (r *run) readyPods(name string, n int, limit time.Duration) {
	r.t.Helper()
	end := time.Now().Add(limit)
	for {
		l, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{LabelSelector: "app=" + deploymentName(0)})
		if err == nil {
			ready, active := 0, 0
			for _, p := range l.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
					active++
					if podReadyStatus(&p) {
						ready++
					}
				}
			}
			if ready == n && active == n {
				return
			}
		}
		if time.Now().After(end) {
			r.t.Fatalf("%d ready pods of %s: not within %v", n, name, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// reportLine appends a line to $CTRLKIT_E2E_REPORT, if set.
func reportLine(t *testing.T, line string) {
	path := os.Getenv("CTRLKIT_E2E_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(line + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Error(err)
	}
}
