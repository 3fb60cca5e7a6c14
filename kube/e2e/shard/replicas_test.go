//go:build e2e

package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
	"github.com/ctrlkit/ctrlkit/shard"
)

// replica is one ctrlkit-controller process with --shard, reaching the
// API server through a recording proxy of its own.
type replica struct {
	name  string
	cmd   *exec.Cmd
	addr  string
	out   *syncBuffer
	done  chan error
	proxy *cluster.Proxy
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startReplica(t *testing.T, name, group, mode string, seed uint64) *replica {
	t.Helper()
	p, err := cluster.StartProxy(cp, seed, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	r := &replica{name: name, addr: freeAddr(t), out: &syncBuffer{}, done: make(chan error, 1), proxy: p}
	r.cmd = exec.Command(ctrlkitBin, "--kubeconfig="+p.Kubeconfig(), "--shard", "--shard-identity="+name, "--shard-group="+group,
		"--shard-selector="+mode, "--shard-ranges=8", "--bind-address="+r.addr, "--v=2")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill() // our own child, by PID
			<-r.done
		}
	})
	return r
}

// metric sums the samples of name in the replica's /metrics.
func (r *replica) metric(name string) float64 {
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return total
}

// timeline follows the group's assignment Lease.
type timeline struct {
	mu       sync.Mutex
	versions []version
}

type version struct {
	at time.Time
	a  shard.Assignment
}

func follow(ctx context.Context, t *testing.T, cs kubernetes.Interface, group string) *timeline {
	tl := &timeline{}
	w, err := cs.CoordinationV1().Leases("kube-system").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + group})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			l, ok := ev.Object.(interface{ GetAnnotations() map[string]string })
			if !ok {
				continue
			}
			var a shard.Assignment
			if json.Unmarshal([]byte(l.GetAnnotations()[shard.AnnotationAssignment]), &a) != nil {
				continue
			}
			tl.mu.Lock()
			tl.versions = append(tl.versions, version{time.Now(), a})
			tl.mu.Unlock()
		}
	}()
	return tl
}

func (tl *timeline) last() (shard.Assignment, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.versions) == 0 {
		return shard.Assignment{}, false
	}
	return tl.versions[len(tl.versions)-1].a, true
}

// ownerAt returns the owners of range i between from and to (as the
// test saw the record: a change shows a little after it happened).
func (tl *timeline) ownersBetween(i int, from, to time.Time) []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for k, v := range tl.versions {
		next := time.Now().Add(time.Hour)
		if k+1 < len(tl.versions) {
			next = tl.versions[k+1].at
		}
		if v.at.Before(to) && next.After(from) && !slices.Contains(out, v.a.Owners[i].Member) {
			out = append(out, v.a.Owners[i].Member)
		}
	}
	return out
}

func rangeOf(a shard.Assignment, ns string) int {
	h, i := shard.Hash(ns), 0
	for k, s := range a.Starts {
		if v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); err == nil && v <= h {
			i = k
		}
	}
	return i
}

// assigned reports whether every range belongs to one of live.
func assigned(a shard.Assignment, live ...string) bool {
	per := map[string]int{}
	for _, o := range a.Owners {
		if !slices.Contains(live, o.Member) {
			return false
		}
		per[o.Member]++
	}
	return len(per) == len(live)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// world is the workload: Deployments in test namespaces, a kubelet.
type world struct {
	t     *testing.T
	ctx   context.Context
	cs    kubernetes.Interface
	ns    []string
	deps  int
	scale int32
}

func newWorld(t *testing.T, ctx context.Context, cs kubernetes.Interface, namespaces, perNamespace int) *world {
	w := &world{t: t, ctx: ctx, cs: cs, deps: namespaces * perNamespace, scale: 3}
	for i := range namespaces {
		ns := fmt.Sprintf("team-%02d", i)
		w.ns = append(w.ns, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k := &simkubelet.Kubelet{Client: cs, ReadyDelay: 100 * time.Millisecond}
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Run(kctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *world) create(image string) {
	for i, ns := range w.ns {
		for j := range w.deps / len(w.ns) {
			name := fmt.Sprintf("web-%d", j)
			l := map[string]string{"app": name}
			grace := int64(0)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: appsv1.DeploymentSpec{Replicas: &w.scale, Selector: &metav1.LabelSelector{MatchLabels: l},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
						Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{Name: "app", Image: image}}}}}}
			if _, err := w.cs.AppsV1().Deployments(ns).Create(w.ctx, d, metav1.CreateOptions{}); err != nil {
				w.t.Fatalf("namespace %d: %v", i, err)
			}
		}
	}
}

func (w *world) rollout(image string) {
	for _, ns := range w.ns {
		for j := range w.deps / len(w.ns) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d, err := w.cs.AppsV1().Deployments(ns).Get(w.ctx, fmt.Sprintf("web-%d", j), metav1.GetOptions{})
				if err != nil {
					return err
				}
				d.Spec.Template.Spec.Containers[0].Image = image
				_, err = w.cs.AppsV1().Deployments(ns).Update(w.ctx, d, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// converged reports whether every Deployment runs image: status complete,
// and exactly scale live pods, all of image (none lost, none extra).
func (w *world) converged(image string) (bool, string) {
	for _, ns := range w.ns {
		ds, err := w.cs.AppsV1().Deployments(ns).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, d := range ds.Items {
			s := d.Status
			if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != w.scale || s.AvailableReplicas != w.scale || s.Replicas != w.scale {
				return false, fmt.Sprintf("%s/%s: %+v", ns, d.Name, s)
			}
			n := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || p.Labels["app"] != d.Name {
					continue
				}
				if p.Spec.Containers[0].Image != image {
					return false, fmt.Sprintf("%s/%s runs %s", ns, p.Name, p.Spec.Containers[0].Image)
				}
				n++
			}
			if n != int(w.scale) {
				return false, fmt.Sprintf("%s/%s has %d pods", ns, d.Name, n)
			}
		}
	}
	return true, ""
}

func (w *world) waitConverged(image string, timeout time.Duration) time.Duration {
	w.t.Helper()
	var why string
	start := time.Now()
	for {
		ok, reason := w.converged(image)
		if ok {
			return time.Since(start)
		}
		why = reason
		if time.Since(start) > timeout {
			w.t.Fatalf("not rolled out to %s after %v: %s", image, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCheck checks the replicas' writes, from their proxies' logs: each
// within a tenure of its writer in the assignment, and, per namespace, no
// two replicas' stretches of writes overlapping in time.
func writeCheck(t *testing.T, tl *timeline, rs []*replica) (writes int, problems []string) {
	type w struct {
		replica    string
		start, end time.Time
		what       string
	}
	byNS := map[string][]w{}
	for _, r := range rs {
		for _, q := range r.proxy.Requests() {
			if !q.Request.IsWrite() || q.Code == 0 {
				continue
			}
			res := strings.Split(q.Request.Resource, "/")[0]
			if res != "deployments" && res != "replicasets" && res != "pods" {
				continue
			}
			ns := pathNamespace(q.Path)
			byNS[ns] = append(byNS[ns], w{r.name, q.Start, q.End, q.Request.String() + " " + q.Path})
			writes++
			a, ok := tl.last()
			if !ok {
				problems = append(problems, "no assignment seen")
				continue
			}
			i := rangeOf(a, ns)
			// The test sees the record through a watch: allow a second.
			if owners := tl.ownersBetween(i, q.Start.Add(-time.Second), q.End.Add(time.Second)); !slices.Contains(owners, r.name) {
				problems = append(problems, fmt.Sprintf("%s by %s at %s while range %d was %v's", q.Request, r.name, q.Start.Format("15:04:05.000"), i, owners))
			}
		}
	}
	for ns, ws := range byNS {
		slices.SortFunc(ws, func(a, b w) int { return a.start.Compare(b.start) })
		// Stretches: runs of one replica's writes; each must have ended
		// before the next one starts.
		prev, curEnd := "", time.Time{}
		for _, x := range ws {
			if x.replica != prev {
				if prev != "" && x.start.Before(curEnd) {
					problems = append(problems, fmt.Sprintf("%s: %s wrote at %s while %s's writes ran until %s (%s)", ns, x.replica, x.start.Format("15:04:05.000"), prev, curEnd.Format("15:04:05.000"), x.what))
				}
				prev, curEnd = x.replica, x.end
				continue
			}
			if x.end.After(curEnd) {
				curEnd = x.end
			}
		}
	}
	slices.Sort(problems)
	return writes, problems
}

func pathNamespace(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}

// countEvents counts the watch events of Deployments, ReplicaSets and
// pods in every namespace until stop.
func countEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	// From the current version: no initial events.
	rv := func(l interface{ GetResourceVersion() string }, err error) metav1.ListOptions {
		if err != nil {
			t.Fatal(err)
		}
		return metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}
	}
	d := rv(cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1}))
	r := rv(cs.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{Limit: 1}))
	p := rv(cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}))
	for _, open := range []func() (watch.Interface, error){
		func() (watch.Interface, error) { return cs.AppsV1().Deployments("").Watch(ctx, d) },
		func() (watch.Interface, error) { return cs.AppsV1().ReplicaSets("").Watch(ctx, r) },
		func() (watch.Interface, error) { return cs.CoreV1().Pods("").Watch(ctx, p) },
	} {
		w, err := open()
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	return func() int {
		cancel()
		wg.Wait()
		return n
	}
}

// TestShardedReplicas runs 3 ctrlkit-controller replicas with --shard on
// kube-apiserver with the ShardedListAndWatch gate: they share the
// namespaces, each receives about a third of the watch events; one is
// killed (SIGKILL) during a rollout: its ranges move within the lease
// duration + 2 s, no replica writes outside its ranges or while another
// writes the same namespace, no pod is lost or extra, every Deployment
// rolls out. Then 3 replicas filtering on the client only
// (--shard-selector=client): each receives every event.
func TestShardedReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Config(100, 200))
	w := newWorld(t, ctx, cs, 12, 2)
	w.create("app:1")
	tl := follow(ctx, t, cs, "ctrlkit-controller")
	rs := []*replica{startReplica(t, "r0", "ctrlkit-controller", "auto", 1), startReplica(t, "r1", "ctrlkit-controller", "auto", 2), startReplica(t, "r2", "ctrlkit-controller", "auto", 3)}
	waitFor(t, "3 replicas share the ranges", time.Minute, func() bool {
		a, ok := tl.last()
		return ok && assigned(a, "r0", "r1", "r2")
	})
	w.waitConverged("app:1", 2*time.Minute)

	// Watch events: a clean rollout, server-side sharding.
	before := make([]float64, len(rs))
	for i, r := range rs {
		before[i] = r.metric("ctrlkit_watch_events_received_total")
	}
	stop := countEvents(ctx, t, cs)
	w.rollout("app:2")
	w.waitConverged("app:2", 2*time.Minute)
	total := stop()
	var server []string
	for i, r := range rs {
		server = append(server, fmt.Sprintf("%s %.0f (%.0f%%)", r.name, r.metric("ctrlkit_watch_events_received_total")-before[i],
			100*(r.metric("ctrlkit_watch_events_received_total")-before[i])/float64(total)))
		if f := r.metric("ctrlkit_shard_server_filtering"); f != 3 {
			t.Errorf("%s: ctrlkit_shard_server_filtering sums to %v over its 3 resources; want 3 (the server filters)", r.name, f)
		}
	}
	t.Logf("server-side sharding: %d watch events in all during a rollout; received per replica: %s", total, strings.Join(server, ", "))

	// Kill r1 during the next rollout.
	w.rollout("app:3")
	time.Sleep(300 * time.Millisecond)
	if ok, _ := w.converged("app:3"); ok {
		t.Fatal("the rollout finished before the kill")
	}
	killed := time.Now()
	if err := rs[1].cmd.Process.Kill(); err != nil { // our own child, by PID
		t.Fatal(err)
	}
	<-rs[1].done
	moved := waitFor(t, "r1's ranges reassigned", time.Minute, func() bool {
		a, ok := tl.last()
		return ok && assigned(a, "r0", "r2")
	})
	_ = killed
	conv := w.waitConverged("app:3", 2*time.Minute)
	n, problems := writeCheck(t, tl, rs)
	t.Logf("kill mid-rollout: r1's ranges reassigned %v after SIGKILL (lease duration 15 s); rollout complete %v after; %d writes checked, %d problems", moved.Round(10*time.Millisecond), conv.Round(10*time.Millisecond), n, len(problems))
	if moved > 17*time.Second {
		t.Errorf("ranges reassigned %v after the kill; want within the lease duration + 2 s", moved)
	}
	for _, p := range problems[:min(10, len(problems))] {
		t.Errorf("write: %s", p)
	}
	for _, r := range []*replica{rs[0], rs[2]} {
		if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := <-r.done; err != nil {
			t.Errorf("%s exited with %v:\n%s", r.name, err, r.out.String())
		}
	}

	// Client-side filtering: a new group of 3.
	tl2 := follow(ctx, t, cs, "ctrlkit-client")
	cr := []*replica{startReplica(t, "c0", "ctrlkit-client", "client", 4), startReplica(t, "c1", "ctrlkit-client", "client", 5), startReplica(t, "c2", "ctrlkit-client", "client", 6)}
	waitFor(t, "3 client-side replicas share the ranges", time.Minute, func() bool {
		a, ok := tl2.last()
		return ok && assigned(a, "c0", "c1", "c2")
	})
	w.waitConverged("app:3", time.Minute)
	for i, r := range cr {
		before[i] = r.metric("ctrlkit_watch_events_received_total")
	}
	stop = countEvents(ctx, t, cs)
	w.rollout("app:4")
	w.waitConverged("app:4", 2*time.Minute)
	total = stop()
	var client []string
	for i, r := range cr {
		got := r.metric("ctrlkit_watch_events_received_total") - before[i]
		client = append(client, fmt.Sprintf("%s %.0f (%.0f%%)", r.name, got, 100*got/float64(total)))
		if got < 0.8*float64(total) {
			t.Errorf("%s received %.0f of %d events filtering on the client; want about all", r.name, got, total)
		}
	}
	t.Logf("client-side filtering: %d watch events in all during a rollout; received per replica: %s", total, strings.Join(client, ", "))
	if _, p := writeCheck(t, tl2, cr); len(p) > 0 {
		t.Errorf("client-side group: %d write problems, e.g. %s", len(p), p[0])
	}
}
