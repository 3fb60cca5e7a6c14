//go:build e2e

package compare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TestScale rolls CTRLKIT_E2E_SCALE Deployments of 4 replicas out at once
// (500 is the reference run), first with the upstream
// kube-controller-manager, then with ours (the ctrlkit-controller binary),
// in two phases each: create all of them, then change the image of all of
// them. Per phase it reports the time until all are complete (and old
// ReplicaSets at 0 pods), the controllers' writes and events, and the
// controller process's CPU seconds and peak RSS (from /proc). Opt-in: it is
// skipped unless CTRLKIT_E2E_SCALE is set.
//
// CTRLKIT_E2E_SCALE_QPS (default 20) sets the client-side rate limit of
// both sides (--kube-api-qps; burst 1.5×), CTRLKIT_E2E_BATCH our
// --sync-batch-period, CTRLKIT_E2E_SCALE_KCM kube-controller-manager's
// --controllers (default deployment-controller,replicaset-controller: the
// two controllers ours replaces, nothing else using its CPU),
// CTRLKIT_E2E_SCALE_FLAGS more flags of ours (space-separated, e.g.
// --low-priority-events), and CTRLKIT_E2E_SCALE_SIDES=ours skips upstream.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CTRLKIT_E2E_SCALE"))
	if n <= 0 {
		t.Skip("set CTRLKIT_E2E_SCALE=500 to run the scale comparison")
	}
	qps := 20.0
	if s := os.Getenv("CTRLKIT_E2E_SCALE_QPS"); s != "" {
		var err error
		if qps, err = strconv.ParseFloat(s, 64); err != nil || qps <= 0 {
			t.Fatalf("CTRLKIT_E2E_SCALE_QPS=%q: want a positive number", s)
		}
	}
	burst := int(1.5 * qps)
	controllers := os.Getenv("CTRLKIT_E2E_SCALE_KCM")
	if controllers == "" {
		controllers = "deployment-controller,replicaset-controller"
	}
	batch := batchPeriod(t)
	limits := []string{fmt.Sprintf("--kube-api-qps=%g", qps), fmt.Sprintf("--kube-api-burst=%d", burst)}
	ctx := context.Background()
	bin := buildController(t) // before anything is measured

	// Upstream (CTRLKIT_E2E_SCALE_SIDES=ours skips it, to measure a change
	// of ours against an earlier upstream run).
	var upPhases []scalePhase
	if os.Getenv("CTRLKIT_E2E_SCALE_SIDES") != "ours" {
		upPhases = scaleUpstream(t, ctx, n, controllers, limits)
	}

	// Ours.
	ours := newScaleRun(t, ctx, "scale-ctrlkit", n)
	extra := strings.Fields(os.Getenv("CTRLKIT_E2E_SCALE_FLAGS"))
	flags := append(append(slices.Clone(limits), "--sync-batch-period="+batch.String()), extra...)
	ctl := startController(t, bin, ours.ns, flags...)
	time.Sleep(3 * time.Second)
	ourPhases := ours.phases(ctl.pid(), func() map[kube.Request]int {
		w, err := ctl.writes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}, false)
	if p, err := cluster.ReadProc(ctl.pid()); err == nil {
		t.Logf("ours: ctrlkit-controller used %.1f CPU s since its start", p.CPU.Seconds())
	}
	ctl.stop(t)

	title := fmt.Sprintf("Scale: %d Deployments × 4 replicas, client QPS %g / burst %d (each side, per client), "+
		"kube-controller-manager --controllers=%s, ours %s", n, qps, burst, controllers, strings.Join(flags[len(limits):], " "))
	scaleReport(t, title, upPhases, ourPhases)
}

// scaleUpstream runs TestScale's phases with kube-controller-manager.
func scaleUpstream(t *testing.T, ctx context.Context, n int, controllers string, limits []string) []scalePhase {
	if err := cp.StartKCM(ctx, controllers, limits...); err != nil {
		t.Fatal(err)
	}
	kcmRunning := true
	defer func() {
		if kcmRunning {
			_ = cp.StopKCM(ctx)
		}
	}()
	kcm, err := cp.KCMPid()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // informers synced
	up := newScaleRun(t, ctx, "scale-upstream", n)
	upPhases := up.phases(kcm, func() map[kube.Request]int { return apiserverControllerWrites(t, ctx) }, true)
	if p, err := cluster.ReadProc(kcm); err == nil {
		t.Logf("upstream: kube-controller-manager used %.1f CPU s since its start", p.CPU.Seconds())
	}
	if err := cp.StopKCM(ctx); err != nil {
		t.Fatal(err)
	}
	kcmRunning = false
	up.clear() // ours runs on a cluster holding only its own objects

	return upPhases
}

// apiserverControllerWrites returns the apiserver's cumulative request
// counts for the resources the controllers write, with its 409s under the
// pseudo verb "conflict(verb)".
func apiserverControllerWrites(t *testing.T, ctx context.Context) map[kube.Request]int {
	m, c, err := cp.RequestTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[kube.Request]int{}
	for r, v := range m {
		if controllerResource(r) {
			out[r] = int(v)
		}
	}
	for r, v := range c {
		if controllerResource(r) {
			out[kube.Request{Verb: "conflict(" + r.Verb + ")", Resource: r.Resource}] = int(v)
		}
	}
	return out
}

// scaleRun is one side of TestScale: n Deployments in namespace ns.
type scaleRun struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	n       int
	cs      kubernetes.Interface
	harness *kube.WriteCounter // the test's own requests (user + kubelet)
	rec     *cluster.Recorder

	mu   sync.Mutex
	gens map[string]int64 // generation of the test's last write to each Deployment
}

// scalePhase is what one phase of a scaleRun measured.
type scalePhase struct {
	name    string
	wall    time.Duration
	writes  map[kube.Request]int // the controllers' writes, events and 409s
	cpu     time.Duration        // of the controller process
	peakRSS int64                // of the controller process during the phase, bytes
}

func newScaleRun(t *testing.T, ctx context.Context, ns string, n int) *scaleRun {
	t.Helper()
	harness := new(kube.WriteCounter)
	// No client-side limit for the harness: at high controller limits its
	// kubelet (a get and a status update per pod) must not be what
	// throttles the rollout. The admin user is exempt from API priority
	// and fairness.
	cfg := cp.Config(-1, 0)
	cfg.WrapTransport = harness.Wrap
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &scaleRun{t: t, ctx: ctx, ns: ns, n: n, cs: cs, harness: harness,
		rec: &cluster.Recorder{Client: cs, Namespace: ns}, gens: map[string]int64{}}
}

func scaleName(i int) string { return fmt.Sprintf("web-%03d", i) }

// phases runs the two phases with the recorder and the simulated kubelet
// running. pid is the controller process; writes returns its cumulative
// writes (including the harness's if countsHarness, which are then
// subtracted).
func (s *scaleRun) phases(pid int, writes func() map[kube.Request]int, countsHarness bool) []scalePhase {
	defer observe(s.ctx, s.rec, s.cs, s.ns)()

	create := s.measure(fmt.Sprintf("create %d × 4", s.n), pid, writes, countsHarness, func(i int) error {
		d := webDeployment(4, "nginx:1", "", "")
		d.Name = scaleName(i)
		d.Spec.Selector.MatchLabels = map[string]string{"app": d.Name}
		d.Spec.Template.Labels = map[string]string{"app": d.Name}
		got, err := s.cs.AppsV1().Deployments(s.ns).Create(s.ctx, d, metav1.CreateOptions{})
		if err == nil {
			s.wrote(got)
		}
		return err
	})
	image := s.measure(fmt.Sprintf("image change %d × 4", s.n), pid, writes, countsHarness, func(i int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := s.cs.AppsV1().Deployments(s.ns).Get(s.ctx, scaleName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			setImage("nginx:2")(d)
			if d, err = s.cs.AppsV1().Deployments(s.ns).Update(s.ctx, d, metav1.UpdateOptions{}); err == nil {
				s.wrote(d)
			}
			return err
		})
	})
	return []scalePhase{create, image}
}

func (s *scaleRun) wrote(d *appsv1.Deployment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens[d.Name] = d.Generation
}

// measure applies act to all n Deployments at once and waits until all
// are complete.
func (s *scaleRun) measure(name string, pid int, writes func() map[kube.Request]int, countsHarness bool, act func(i int) error) scalePhase {
	t := s.t
	t.Helper()
	if err := cluster.ResetPeakRSS(pid); err != nil {
		t.Logf("%s: cannot reset the peak RSS of %d (the peak is since the process started): %v", name, pid, err)
	}
	p0, err := cluster.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	before, hb, hcb := writes(), s.harness.Counts(), s.harness.Conflicts()
	api := apiserverControllerWrites(t, s.ctx)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range s.n {
		wg.Go(func() {
			if err := act(i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	t.Logf("%s: %d writes sent in %.1f s", name, s.n, time.Since(start).Seconds())
	done, err := s.rec.WaitFor(s.ctx, 40*time.Minute, s.allComplete)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	time.Sleep(3 * time.Second) // trailing writes (events, history cleanup)
	p1, err := cluster.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	harness := diff(s.harness.Counts(), hb)
	for r, c := range diff(s.harness.Conflicts(), hcb) {
		harness[kube.Request{Verb: "conflict(" + r.Verb + ")", Resource: r.Resource}] += c
	}
	minusHarness := func(w map[kube.Request]int) map[kube.Request]int {
		for r, c := range harness {
			if w[r] -= c; w[r] <= 0 {
				delete(w, r)
			}
		}
		return w
	}
	w := diff(writes(), before)
	if countsHarness {
		w = minusHarness(w)
	} else {
		// Cross-check the process's own counts against the apiserver's.
		a := minusHarness(diff(apiserverControllerWrites(t, s.ctx), api))
		t.Logf("%s: %d writes without events by the controller's count, %d by the apiserver's", name, total(w, notEvent), total(a, notEvent))
	}
	p := scalePhase{name: name, wall: done.Sub(start), writes: w, cpu: p1.CPU - p0.CPU, peakRSS: p1.PeakRSS}
	s.dump(name, start)
	t.Logf("%s (%s): %.1f s, %.1f CPU s, peak RSS %.0f MiB, %d writes without events, %d events; %s", name, s.ns,
		p.wall.Seconds(), p.cpu.Seconds(), mib(p.peakRSS), total(w, notEvent), total(w, isEvent), summarize(w))
	return p
}

// dump writes, if CTRLKIT_E2E_SCALE_TRACE names a directory, the phase's
// observed states (one per line, seconds since start) and the count of
// events in the namespace by source and reason (those written by the time
// the phase ended), for offline analysis.
func (s *scaleRun) dump(phase string, start time.Time) {
	dir := os.Getenv("CTRLKIT_E2E_SCALE_TRACE")
	if dir == "" {
		return
	}
	var b strings.Builder
	for _, e := range s.rec.Since(start) {
		fmt.Fprintf(&b, "%.3f %s\n", e.At.Sub(start).Seconds(), e)
	}
	evs, err := s.cs.CoreV1().Events(s.ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Error(err)
		return
	}
	bySource := map[string]int{}
	for _, e := range evs.Items {
		if !e.LastTimestamp.Time.Before(start) {
			bySource[e.Source.Component+" "+e.Reason] += int(e.Count)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(bySource)) {
		fmt.Fprintf(&b, "events %s %d\n", k, bySource[k])
	}
	name := strings.ReplaceAll(fmt.Sprintf("%s-%s.txt", s.ns, phase), " ", "_")
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		s.t.Error(err)
	}
}

// allComplete: every Deployment has observed the test's last write to it
// and is complete, and every ReplicaSet has as many pods as it wants (old
// ones none).
func (s *scaleRun) allComplete(snap cluster.Snapshot) bool {
	if len(snap.Deployments) < s.n {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, d := range snap.Deployments {
		if d.Generation < s.gens[name] || !cluster.Complete(d) {
			return false
		}
	}
	for _, rs := range snap.ReplicaSets {
		if rs.Status.Replicas != *rs.Spec.Replicas || rs.Status.ObservedGeneration < rs.Generation {
			return false
		}
	}
	return true
}

// clear deletes the run's Deployments, ReplicaSets and pods (no garbage
// collector needed).
func (s *scaleRun) clear() {
	opts := metav1.ListOptions{}
	del := metav1.DeleteOptions{}
	if err := s.cs.AppsV1().Deployments(s.ns).DeleteCollection(s.ctx, del, opts); err != nil {
		s.t.Error(err)
	}
	if err := s.cs.AppsV1().ReplicaSets(s.ns).DeleteCollection(s.ctx, del, opts); err != nil {
		s.t.Error(err)
	}
	if err := s.cs.CoreV1().Pods(s.ns).DeleteCollection(s.ctx, del, opts); err != nil {
		s.t.Error(err)
	}
	time.Sleep(3 * time.Second)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func isRSStatus(r kube.Request) bool { return r.IsWrite() && r.Resource == "replicasets/status" }
func isPod(r kube.Request) bool {
	res, _, _ := strings.Cut(r.Resource, "/")
	return r.IsWrite() && res == "pods"
}

// scaleReport logs the table and appends it to CTRLKIT_E2E_REPORT if set.
func scaleReport(t *testing.T, title string, up, ours []scalePhase) {
	type col struct {
		v   func(p scalePhase) float64
		fmt string
	}
	cols := []col{
		{func(p scalePhase) float64 { return p.wall.Seconds() }, "%.1f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, notEvent)) }, "%.0f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, isDStatus)) }, "%.0f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, isRSStatus)) }, "%.0f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, isPod)) }, "%.0f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, isConflict)) }, "%.0f"},
		{func(p scalePhase) float64 { return float64(total(p.writes, isEvent)) }, "%.0f"},
		{func(p scalePhase) float64 { return p.cpu.Seconds() }, "%.1f"},
		{func(p scalePhase) float64 { return mib(p.peakRSS) }, "%.0f"},
	}
	var b strings.Builder
	b.WriteString("\n" + title + "\n\n")
	b.WriteString("| side | phase | wall s | writes without events | deploy status | RS status | pods | 409s | events | CPU s | peak RSS MiB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range ours {
		type side struct {
			name string
			p    scalePhase
		}
		sides := []side{{"ours", ours[i]}}
		if up != nil {
			sides = []side{{"upstream", up[i]}, {"ours", ours[i]}}
		}
		for _, side := range sides {
			fmt.Fprintf(&b, "| %s | %s |", side.name, side.p.name)
			for _, c := range cols {
				fmt.Fprintf(&b, " "+c.fmt+" |", c.v(side.p))
			}
			b.WriteString("\n")
		}
		if up == nil {
			continue
		}
		fmt.Fprintf(&b, "| ours / upstream | %s |", up[i].name)
		for _, c := range cols {
			if u := c.v(up[i]); u > 0 {
				fmt.Fprintf(&b, " %.2f |", c.v(ours[i])/u)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
	if path := os.Getenv("CTRLKIT_E2E_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(b.String())
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Error(err)
		}
	}
}
