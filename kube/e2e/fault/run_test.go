//go:build e2e

package fault

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	"github.com/ctrlkit/ctrlkit/planner"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	// deployments × replicas roll out in every run.
	deployments = 50
	replicas    = 4
	// readyDelay is the simulated kubelet's time from creation to Ready.
	readyDelay = 500 * time.Millisecond
	// qps and burst are both sides' client-side rate limits.
	qps, burst = 100, 150
	// The leases of both sides, short so that a failover is quick.
	leaseDuration, renewDeadline, retryPeriod = 5 * time.Second, 4 * time.Second, time.Second
	// settle is how long trailing writes are counted after convergence.
	settle = 1500 * time.Millisecond
	// deadline bounds every wait (a failure bound, not a synchronisation).
	deadline = 4 * time.Minute
	// kcmDeadline bounds the wait for kube-controller-manager's
	// convergence after a fault. It is the reference, not what is under
	// test: where it does not converge in time (under API errors its
	// ReplicaSet controller can back a key off for minutes, see
	// kube/README.md), or breaks an invariant, the run is reported as
	// such in the table, not failed.
	kcmDeadline = 2 * time.Minute
)

// side is the controllers under test.
type side string

const (
	ctrlkit side = "ctrlkit"
	kcm     side = "kube-controller-manager"
)

// run is one scenario with one seed on one side, in its own namespace.
type run struct {
	t       *testing.T
	ctx     context.Context
	side    side
	seed    uint64
	rnd     *rand.Rand
	ns      string
	dir     string
	lease   string
	cs      kubernetes.Interface
	harness *kube.WriteCounter
	rec     *cluster.Recorder
	procs   []*cluster.Process
	proxies []*cluster.Proxy
	stop    func()

	// Counters of the apiserver: those of apiservers already stopped
	// during the run are added to acc.
	acc, base map[kube.Request]float64
	// actStart is when the image change was sent, faultAt when the fault
	// hit, gens the Deployments' generations after the change.
	actStart, faultAt time.Time
	gens              map[string]int64
	initPods          map[string]bool // UIDs of the pods before the change
	initSpec          map[string]int32
	harnessBase       map[kube.Request]int
	notes             []string
	// problems are what kube-controller-manager got wrong in the run
	// (reported; the same on ctrlkit's side fails the test).
	problems []string
	// finishHook, if set, runs once the run has converged.
	finishHook func()
	// flags are passed to every controller process of the run, after
	// the harness's own.
	flags []string
}

// problem reports something the side under test got wrong: a test
// failure for ctrlkit, a finding to report for kube-controller-manager.
func (r *run) problem(format string, args ...any) {
	r.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if r.side == ctrlkit {
		r.t.Error(msg)
		return
	}
	r.t.Logf("kube-controller-manager (reported, not a failure): %s", msg)
	r.problems = append(r.problems, msg)
}

func newRun(t *testing.T, s side, scenario string, seed uint64) *run {
	t.Helper()
	return newRunWith(t, s, scenario, seed, nil)
}

// newRunWith is newRun whose kubelet, if fault is set, is a
// cluster.FaultKubelet giving each new pod the fault fault picks (a
// kubelet rejection, say) instead of the plain Kubelet.
func newRunWith(t *testing.T, s side, scenario string, seed uint64, fault func(*corev1.Pod) simkubelet.Fault) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	harness := new(kube.WriteCounter)
	cfg := cp.Config(500, 1000)
	cfg.WrapTransport = harness.Wrap
	cs := kubernetes.NewForConfigOrDie(cfg)
	short := map[side]string{ctrlkit: "ck", kcm: "kcm"}[s]
	ns := fmt.Sprintf("%s-%s-%d-%d", short, scenario, seed, time.Now().UnixNano()%100000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("CTRLKIT_FAULT_LOGS"); keep != "" {
		// Kept after the run: the controllers' logs, for a diagnosis.
		dir = mkdir(t, filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_")))
	}
	r := &run{t: t, ctx: ctx, side: s, seed: seed, rnd: rand.New(rand.NewPCG(seed, 0x20)), ns: ns, dir: dir, lease: ns,
		cs: cs, harness: harness, gens: map[string]int64{}}
	r.rec = &cluster.Recorder{Client: cs, Namespace: ns, Pods: true, Objects: true}
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() { r.rec.Run(ctx, ready) })
	<-ready
	if fault != nil {
		k := &cluster.FaultKubelet{Client: cs, Namespace: ns, ReadyDelay: readyDelay, Fault: fault}
		wg.Go(func() { _ = k.Run(ctx) })
	} else {
		k := &cluster.Kubelet{Client: cs, Namespace: ns, ReadyDelay: readyDelay}
		wg.Go(func() { _ = k.Run(ctx) })
	}
	r.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(r.cleanup)
	return r
}

// cleanup stops the controllers, the proxies and the harness, and
// deletes what the run created (there is no garbage collector).
func (r *run) cleanup() {
	for _, p := range r.procs {
		p.Kill()
		if r.t.Failed() {
			r.t.Logf("%s log tail:\n%s", p.Name, p.Tail(15))
		}
	}
	for _, p := range r.proxies {
		p.Close()
	}
	r.stop()
	ctx := context.Background()
	all := metav1.ListOptions{}
	_ = r.cs.AppsV1().Deployments(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = r.cs.AppsV1().ReplicaSets(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = r.cs.CoreV1().Pods(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, all)
	_ = r.cs.CoordinationV1().Leases("kube-system").Delete(ctx, r.lease, metav1.DeleteOptions{})
}

// proxy starts a fault proxy for the run.
func (r *run) proxy(name string) *cluster.Proxy {
	r.t.Helper()
	dir := filepath.Join(r.dir, name)
	p, err := cluster.StartProxy(cp, r.seed, mkdir(r.t, dir))
	if err != nil {
		r.t.Fatal(err)
	}
	r.proxies = append(r.proxies, p)
	return p
}

// controller starts one controller process of the run's side, through
// kubeconfig ("" for the control plane's own), with or without leader
// election.
func (r *run) controller(name, kubeconfig string, leaderElect bool) *cluster.Process {
	r.t.Helper()
	if kubeconfig == "" {
		kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	}
	le := []string{fmt.Sprintf("--leader-elect=%t", leaderElect)}
	if leaderElect {
		le = append(le, "--leader-elect-resource-namespace=kube-system", "--leader-elect-resource-name="+r.lease,
			"--leader-elect-lease-duration="+leaseDuration.String(), "--leader-elect-renew-deadline="+renewDeadline.String(),
			"--leader-elect-retry-period="+retryPeriod.String())
	}
	limits := []string{fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", burst)}
	// CTRLKIT_FAULT_CONTROLLER_FLAGS: extra flags for every controller
	// process, for a diagnosis (e.g. --v=4).
	limits = append(limits, strings.Fields(os.Getenv("CTRLKIT_FAULT_CONTROLLER_FLAGS"))...)
	limits = append(limits, r.flags...)
	var p *cluster.Process
	var err error
	switch r.side {
	case ctrlkit:
		args := append([]string{"--kubeconfig=" + kubeconfig, "--namespace=" + r.ns, "--bind-address=127.0.0.1:0"}, limits...)
		p, err = cluster.StartProcess(r.dir, name, ctrlkitBin, append(args, le...)...)
	case kcm:
		p, err = cp.StartKCMProcess(r.ctx, r.dir, name, kubeconfig, "deployment-controller,replicaset-controller", append(limits, le...)...)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.procs = append(r.procs, p)
	return p
}

// leader waits until one of procs holds the run's Lease (its log says
// so) and returns it.
func (r *run) leader(procs ...*cluster.Process) *cluster.Process {
	r.t.Helper()
	var got *cluster.Process
	r.poll("a leader", func() bool {
		for _, p := range procs {
			select {
			case <-p.Exited():
				continue
			default:
			}
			if p.Logged("uccessfully acquired lease") { // klog's "successfully", or structured "Successfully"
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// holderChange returns when the Lease's holder first became someone other
// than old (polled every 50 ms: the harness's own measurement).
func (r *run) holderChange(old string) (time.Time, string) {
	r.t.Helper()
	var at time.Time
	var holder string
	r.poll("a new lease holder", func() bool {
		l, err := r.cs.CoordinationV1().Leases("kube-system").Get(r.ctx, r.lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false
		}
		if h := *l.Spec.HolderIdentity; h != "" && h != old {
			at, holder = time.Now(), h
			return true
		}
		return false
	})
	return at, holder
}

func (r *run) holder() string {
	l, err := r.cs.CoordinationV1().Leases("kube-system").Get(r.ctx, r.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// poll checks cond every 50 ms until it holds (failing after deadline).
func (r *run) poll(what string, cond func() bool) {
	r.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			r.t.Fatalf("%s: not within %v", what, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deploymentName(i int) string { return fmt.Sprintf("d%02d", i) }

// newDeployment returns Deployment i at image img: even ones surge 1 /
// unavailable 0, odd ones 25%/25%.
func newDeployment(i int, img string) *appsv1.Deployment {
	name := deploymentName(i)
	lbl := map[string]string{"app": name}
	surge, unavail := intstr.FromInt32(1), intstr.FromInt32(0)
	if i%2 == 1 {
		surge, unavail = intstr.FromString("25%"), intstr.FromString("25%")
	}
	n := int32(replicas)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
		},
	}
}

// setup creates the Deployments at app:1 and waits for them to complete.
func (r *run) setup() {
	r.t.Helper()
	for i := range deployments {
		d, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, newDeployment(i, "app:1"), metav1.CreateOptions{})
		if err != nil {
			r.t.Fatal(err)
		}
		r.gens[d.Name] = d.Generation
	}
	r.waitDone("setup")
}

// change sends the image change to every Deployment and records the
// starting point of the measurement.
func (r *run) change() {
	r.t.Helper()
	r.initPods, r.initSpec = map[string]bool{}, map[string]int32{}
	pods, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, p := range pods.Items {
		r.initPods[string(p.UID)] = true
	}
	rss, err := r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rs := range rss.Items {
		r.initSpec[rs.Name] = *rs.Spec.Replicas
	}
	r.acc, r.base = map[kube.Request]float64{}, r.totals()
	r.harnessBase = r.harness.Counts()
	r.actStart = time.Now()
	for i := range deployments {
		name := deploymentName(i)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := r.cs.AppsV1().Deployments(r.ns).Get(r.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Image = "app:2"
			d, err = r.cs.AppsV1().Deployments(r.ns).Update(r.ctx, d, metav1.UpdateOptions{})
			if err == nil {
				r.gens[name] = d.Generation
			}
			return err
		})
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// midRollout waits until a seeded share (20–60%) of the new pods are
// reported updated.
func (r *run) midRollout() {
	r.t.Helper()
	want := int32(float64(deployments*replicas) * (0.2 + 0.4*r.rnd.Float64()))
	_, err := r.rec.WaitFor(r.ctx, deadline, func(s cluster.Snapshot) bool {
		var n int32
		for _, d := range s.Deployments {
			if d.Status.ObservedGeneration >= r.gens[d.Name] {
				n += d.Status.UpdatedReplicas
			}
		}
		return n >= want
	})
	if err != nil {
		r.t.Fatalf("mid-rollout (%d updated pods): %v", want, err)
	}
	r.faultAt = time.Now()
	r.notes = append(r.notes, fmt.Sprintf("fault at %d/%d updated pods", want, deployments*replicas))
}

// waitDone waits until every Deployment is complete at its generation and
// every ReplicaSet has as many pods as it specifies, and fails the test
// if that does not happen within deadline.
func (r *run) waitDone(what string) time.Time {
	r.t.Helper()
	at, err := r.awaitDone(deadline)
	if err != nil {
		r.t.Fatalf("%s: rollout did not complete: %v\nthe API says: %s", what, err, r.notDone())
	}
	return at
}

// awaitDone is waitDone's wait, with a limit and the error returned.
func (r *run) awaitDone(limit time.Duration) (time.Time, error) {
	return r.rec.WaitFor(r.ctx, limit, func(s cluster.Snapshot) bool {
		if len(s.Deployments) < deployments {
			return false
		}
		for _, d := range s.Deployments {
			if d.Generation < r.gens[d.Name] || !cluster.Complete(d) {
				return false
			}
		}
		for _, rs := range s.ReplicaSets {
			if rs.Status.Replicas != *rs.Spec.Replicas || rs.Status.ObservedGeneration < rs.Generation {
				return false
			}
		}
		return true
	})
}

// notDone describes what the API server (not the recorder) says is not
// complete.
func (r *run) notDone() string {
	n, out := r.incomplete()
	return fmt.Sprintf("%d deployments incomplete:\n%s", n, out)
}

// incomplete returns how many Deployments the API server says are not
// complete, and a description of every object that is not.
func (r *run) incomplete() (int, string) {
	n, out, err := r.listIncomplete()
	if err != nil {
		return -1, err.Error()
	}
	return n, out
}

func (r *run) listIncomplete() (int, string, error) {
	var out []string
	var n int
	ds, err := r.cs.AppsV1().Deployments(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return 0, "", err
	}
	for _, d := range ds.Items {
		if d.Generation < r.gens[d.Name] || !cluster.Complete(&d) {
			n++
			out = append(out, fmt.Sprintf("deploy/%s gen %d/%d status %+v", d.Name, d.Status.ObservedGeneration, d.Generation, d.Status))
		}
	}
	rss, err := r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return 0, "", err
	}
	for _, rs := range rss.Items {
		if rs.Status.Replicas != *rs.Spec.Replicas || rs.Status.ObservedGeneration < rs.Generation {
			out = append(out, fmt.Sprintf("rs/%s spec %d status %+v", rs.Name, *rs.Spec.Replicas, rs.Status))
		} else if ref := metav1.GetControllerOf(&rs); ref != nil && !r.rsCurrent(&rs, ds.Items) {
			out = append(out, fmt.Sprintf("rs/%s of an incomplete deployment: spec %d status %+v", rs.Name, *rs.Spec.Replicas, rs.Status))
		}
	}
	pods, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return 0, "", err
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			out = append(out, fmt.Sprintf("pod/%s %s created %s", p.Name, p.Status.Phase, p.CreationTimestamp.Format(time.StampMilli)))
		}
	}
	return n, fmt.Sprintf("%d deployments, %d replica sets, %d pods:\n%s", len(ds.Items), len(rss.Items), len(pods.Items), strings.Join(out, "\n")), nil
}

// rsCurrent reports whether rs's Deployment (among ds) is complete; a
// ReplicaSet of an incomplete one is worth showing even when its status
// matches its spec (its availability may be what the Deployment waits for).
func (r *run) rsCurrent(rs *appsv1.ReplicaSet, ds []appsv1.Deployment) bool {
	ref := metav1.GetControllerOf(rs)
	for i := range ds {
		if ds[i].UID == ref.UID {
			return ds[i].Generation >= r.gens[ds[i].Name] && cluster.Complete(&ds[i])
		}
	}
	return true
}

// totals are the apiserver's request counters now, plus those of
// apiservers stopped during the run.
func (r *run) totals() map[kube.Request]float64 {
	r.t.Helper()
	all, _, err := cp.RequestTotals(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	for k, v := range r.acc {
		all[k] += v
	}
	return all
}

// restarted takes the counters of an apiserver about to be stopped.
func (r *run) restarted(before map[kube.Request]float64) {
	for k, v := range before {
		r.acc[k] += v
	}
}

// result is what one run measured.
type result struct {
	side               side
	scenario           string
	seed               uint64
	total, recovery    time.Duration
	creates, needed    int // pods created, and needed by the sizes the ReplicaSets went through
	extraCreates, lost int
	writes             map[kube.Request]int // the controllers' writes (no events, no leases)
	events             int
	violations         []string
	final              map[string]dState
	notes              []string
	// stuck is how many Deployments kube-controller-manager left
	// incomplete at kcmDeadline (0: it converged); problems what it got
	// wrong (ctrlkit's fail the test instead).
	stuck    int
	problems []string
}

func (res result) writeTotal() int {
	n := 0
	for _, v := range res.writes {
		n += v
	}
	return n
}

// finish waits for convergence and measures the run. A ctrlkit run that
// does not converge fails; a kube-controller-manager run that does not
// within kcmDeadline is measured as it stands and reported stuck.
func (r *run) finish(scenario string) result {
	r.t.Helper()
	res := result{side: r.side, scenario: scenario, seed: r.seed}
	var done time.Time
	if r.side == kcm && !r.faultAt.IsZero() {
		var err error
		if done, err = r.awaitDone(kcmDeadline); err != nil {
			var what string
			res.stuck, what = r.incomplete()
			r.problem("not converged %v after the fault: %s", kcmDeadline, what)
			done = time.Now()
		}
	} else {
		done = r.waitDone("after the fault")
	}
	time.Sleep(settle) // a measurement window for trailing writes, not a synchronisation
	if os.Getenv("CTRLKIT_FAULT_LOGS") != "" {
		r.dumpTrace()
	}
	if r.finishHook != nil {
		r.finishHook()
	}
	res.total, res.notes = done.Sub(r.actStart), r.notes
	if !r.faultAt.IsZero() {
		res.recovery = done.Sub(r.faultAt)
	}
	// Writes: the apiserver's counts less the harness's own.
	after := r.totals()
	harness := r.harness.Counts()
	res.writes = map[kube.Request]int{}
	for k, v := range after {
		if !k.IsWrite() {
			continue
		}
		n := int(v-r.base[k]) - (harness[k] - r.harnessBase[k])
		res0, _, _ := strings.Cut(k.Resource, "/")
		switch {
		case n <= 0:
		case res0 == "events":
			res.events += n
		case res0 == "pods" || res0 == "replicasets" || res0 == "deployments":
			res.writes[k] = n
		}
	}
	r.measurePods(&res)
	r.check(&res)
	res.final = r.finalState()
	res.problems = r.problems
	return res
}

// measurePods counts, per ReplicaSet, the pods created during the run
// against the increases of its spec.replicas, and the pods deleted against
// its decreases.
func (r *run) measurePods(res *result) {
	r.t.Helper()
	seqs := map[string][]int32{}
	for name, n := range r.initSpec {
		seqs[name] = []int32{n}
	}
	for name, s := range cluster.SpecSequences(r.rec.Since(r.actStart)) {
		if len(seqs[name]) == 0 {
			seqs[name] = []int32{0}
		}
		for _, v := range s {
			if last := seqs[name][len(seqs[name])-1]; v != last {
				seqs[name] = append(seqs[name], v)
			}
		}
	}
	live, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	liveBy := map[string]int{}
	isLive := map[string]bool{}
	for _, p := range live.Items {
		isLive[string(p.UID)] = true
		if ref := metav1.GetControllerOf(&p); ref != nil {
			liveBy[ref.Name]++
		}
	}
	created, deleted := map[string]int{}, map[string]int{}
	for _, p := range r.rec.PodRecords() {
		if !r.initPods[string(p.UID)] {
			created[p.Owner]++
		}
		if !isLive[string(p.UID)] {
			deleted[p.Owner]++
		}
	}
	for name, seq := range seqs {
		var up, down int
		for i := 1; i < len(seq); i++ {
			if d := int(seq[i] - seq[i-1]); d > 0 {
				up += d
			} else {
				down -= d
			}
		}
		extra := max(0, created[name]-up)
		res.creates += created[name]
		res.needed += up
		res.extraCreates += extra
		if lost := deleted[name] - down - extra; lost > 0 {
			res.lost += lost
			r.problem("rs/%s: %d pods deleted, its size went down by %d and %d were extra: %d lost (sizes %v)", name, deleted[name], down, extra, lost, seq)
		}
		if extra > 0 {
			r.problem("rs/%s: %d pods created, its size went up by %d: %d extra (sizes %v)", name, created[name], up, extra, seq)
		}
		if want := int(seq[len(seq)-1]); liveBy[name] != want && res.stuck == 0 {
			var pods []string
			for _, p := range live.Items {
				if ref := metav1.GetControllerOf(&p); ref != nil && ref.Name == name {
					pods = append(pods, fmt.Sprintf("%s created %s deleting %v phase %s before the change %t",
						p.Name, p.CreationTimestamp.Format(time.StampMilli), p.DeletionTimestamp, p.Status.Phase, r.initPods[string(p.UID)]))
				}
			}
			r.problem("rs/%s: %d pods at the end, spec.replicas %d (sizes %v): %v", name, liveBy[name], want, seq, pods)
		}
	}
}

// check runs planner.Check on the trace of every Deployment.
func (r *run) check(res *result) {
	r.t.Helper()
	for name, snaps := range r.rec.Snapshots(r.actStart) {
		tr, err := planner.TraceFrom(snaps)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, v := range planner.Check(tr, snaps[len(snaps)-1].Deployment) {
			res.violations = append(res.violations, fmt.Sprintf("deploy/%s %v", name, v))
		}
	}
	sort.Strings(res.violations)
	for _, v := range res.violations {
		r.problem("invariant: %s", v)
	}
}

// dState is a Deployment's final state with its ReplicaSets, without
// times and UIDs: identical between a faulty and a fault-free run.
type dState struct {
	Status      string
	Annotations map[string]string
	Conditions  []string
	ReplicaSets map[string]string
}

func (r *run) finalState() map[string]dState {
	r.t.Helper()
	ds, err := r.cs.AppsV1().Deployments(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	rss, err := r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]dState{}
	for _, d := range ds.Items {
		st := d.Status
		s := dState{Annotations: d.Annotations, ReplicaSets: map[string]string{},
			Status: fmt.Sprintf("observed=%d replicas=%d updated=%d ready=%d available=%d unavailable=%d terminating=%s collisions=%v",
				st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas,
				fmtPtr(st.TerminatingReplicas), st.CollisionCount)}
		for _, c := range st.Conditions {
			s.Conditions = append(s.Conditions, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		for _, rs := range rss.Items {
			if metav1.IsControlledBy(&rs, &d) {
				keys := slices.Sorted(maps.Keys(rs.Annotations))
				var ann []string
				for _, k := range keys {
					ann = append(ann, k+"="+rs.Annotations[k])
				}
				s.ReplicaSets[rs.Name] = fmt.Sprintf("replicas=%d/%d terminating=%s image=%s %s", *rs.Spec.Replicas, rs.Status.Replicas,
					fmtPtr(rs.Status.TerminatingReplicas), rs.Spec.Template.Spec.Containers[0].Image, strings.Join(ann, ","))
			}
		}
		out[d.Name] = s
	}
	return out
}

// dumpTrace writes every state the recorder saw since the change to
// trace.txt in the run's directory, one per line with its time from the
// change, and the apiserver's write counters by code (cumulative over the
// runs of the package, and from zero after a restart): kept with
// CTRLKIT_FAULT_LOGS, for a diagnosis.
func (r *run) dumpTrace() {
	var b strings.Builder
	for _, e := range r.rec.Since(r.actStart) {
		fmt.Fprintf(&b, "%8.3f %s\n", e.At.Sub(r.actStart).Seconds(), e)
	}
	if !r.faultAt.IsZero() {
		fmt.Fprintf(&b, "fault at %.3f\n", r.faultAt.Sub(r.actStart).Seconds())
	}
	// The apiserver's write counters by code (of the apiserver running
	// now: a restarted one's start from zero).
	raw, err := r.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(r.ctx)
	if err == nil {
		var samples []cluster.Sample
		if samples, err = cluster.Samples(strings.NewReader(string(raw)), "apiserver_request_total"); err == nil {
			var lines []string
			for _, x := range samples {
				l := x.Labels
				if (l["group"] == "apps" || l["resource"] == "pods") && slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE"}, l["verb"]) {
					lines = append(lines, fmt.Sprintf("%-6s %-11s %-6s %s %.0f", l["verb"], l["resource"], l["subresource"], l["code"], x.Value))
				}
			}
			sort.Strings(lines)
			fmt.Fprintf(&b, "apiserver writes by code:\n%s\n", strings.Join(lines, "\n"))
		}
	}
	if err != nil {
		fmt.Fprintf(&b, "apiserver counters: %v\n", err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "trace.txt"), []byte(b.String()), 0o644); err != nil {
		r.t.Error(err)
	}
	// Every request through the run's proxies, with its outcome.
	for i, px := range r.proxies {
		var pb strings.Builder
		for _, q := range px.Requests() {
			fmt.Fprintf(&pb, "%8.3f %8.3f %d injected=%t %s %s\n", q.Start.Sub(r.actStart).Seconds(), q.End.Sub(r.actStart).Seconds(),
				q.Code, q.Injected, q.Request, q.Path)
		}
		if err := os.WriteFile(filepath.Join(r.dir, fmt.Sprintf("proxy%d.txt", i)), []byte(pb.String()), 0o644); err != nil {
			r.t.Error(err)
		}
	}
}

// fmtPtr renders an optional count, nil as "nil".
func fmtPtr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
