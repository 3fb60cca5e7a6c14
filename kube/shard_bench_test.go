package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/shard"
)

// shardScale is the size of a sharded run.
type shardScale struct {
	namespaces, deployments, replicas int
	ranges                            int
}

// smallScale runs in the default tests; CTRLKIT_SHARD_BENCH=full the
// issue's 2,000 Deployments × 10 replicas in 200 namespaces.
func benchScale() (shardScale, bool) {
	if os.Getenv("CTRLKIT_SHARD_BENCH") == "full" {
		return shardScale{namespaces: 200, deployments: 2000, replicas: 10, ranges: 16}, true
	}
	return shardScale{namespaces: 20, deployments: 40, replicas: 3, ranges: 8}, false
}

type replicaKey struct{}

// shardWorld is one in-memory cluster, its kubelet, and sharded
// ctrlkit-controller replicas talking to it over its REST API (in
// process, protobuf, inside a testing/synctest bubble).
type shardWorld struct {
	t     testingT
	c     *memcluster.Cluster
	h     http.Handler
	scale shardScale
	start time.Time

	seq      atomic.Int64
	mu       sync.Mutex
	writes   []replicaWrite
	records  []recordVersion
	replicas map[string]*replica
	order    []string
}

type testingT interface {
	Helper()
	Fatalf(string, ...any)
	Errorf(string, ...any)
	Logf(string, ...any)
	Context() context.Context
}

type replicaWrite struct {
	seq                 int64
	replica, namespace  string
	verb, resource, obj string
}

type recordVersion struct {
	seq int64
	a   shard.Assignment
}

type replica struct {
	name    string
	killed  atomic.Bool
	cancel  context.CancelFunc
	done    chan error
	metrics *kube.Metrics
}

func newShardWorld(t testingT, scale shardScale) *shardWorld {
	w := &shardWorld{t: t, scale: scale, replicas: map[string]*replica{}, start: time.Now()}
	w.c = memcluster.New(memcluster.Config{Seed: 1, RequireNamespaces: true, WatchHistory: 100000, WatchBuffer: 100000,
		OnRequest: w.onRequest, OnWrite: w.onWrite})
	memcluster.AddBuiltinKinds(w.c)
	w.h = memcluster.NewHandler(w.c)
	return w
}

func (w *shardWorld) onRequest(ctx context.Context, r memcluster.Request) {
	name, _ := ctx.Value(replicaKey{}).(string)
	if name == "" {
		return
	}
	switch r.Resource {
	case "deployments", "replicasets", "pods":
	default:
		return
	}
	switch r.Verb {
	case "get", "list", "watch":
		return
	}
	w.mu.Lock()
	w.writes = append(w.writes, replicaWrite{seq: w.seq.Add(1), replica: name, namespace: r.Namespace, verb: string(r.Verb), resource: r.Resource, obj: r.Name})
	w.mu.Unlock()
}

func (w *shardWorld) onWrite(wr memcluster.Write) {
	if wr.Resource != "leases" || wr.Object.GetName() != "ctrlkit-controller" || wr.Object.GetNamespace() != "kube-system" {
		return
	}
	var a shard.Assignment
	raw := wr.Object.GetAnnotations()[shard.AnnotationAssignment]
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return
	}
	w.mu.Lock()
	w.records = append(w.records, recordVersion{seq: w.seq.Add(1), a: a})
	w.mu.Unlock()
}

// replicaTransport tags a replica's requests (for the request log) and
// fails every one once the replica is killed, as a dead process sends
// none.
type replicaTransport struct {
	r    *replica
	next http.RoundTripper
}

func (rt replicaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.r.killed.Load() {
		return nil, errors.New("killed")
	}
	return rt.next.RoundTrip(req.WithContext(context.WithValue(req.Context(), replicaKey{}, rt.r.name)))
}

func (w *shardWorld) startReplica(name string, mode kube.SelectorMode) {
	r := &replica{name: name, done: make(chan error, 1)}
	m, err := kube.NewMetrics(nil)
	if err != nil {
		w.t.Fatalf("%v", err)
	}
	r.metrics = m
	cfg := &rest.Config{Host: "http://memcluster", Transport: replicaTransport{r: r, next: memcluster.Transport{Handler: w.h}}, QPS: 20, Burst: 30}
	op := &kube.Operator{Config: cfg, Metrics: m, Sharding: &kube.Sharding{Identity: name, Ranges: w.scale.ranges, Selector: mode}}
	ctx, cancel := context.WithCancel(w.t.Context())
	r.cancel = cancel
	go func() { r.done <- op.Run(ctx) }()
	w.mu.Lock()
	w.replicas[name] = r
	w.order = append(w.order, name)
	w.mu.Unlock()
}

// kill stops a replica as kill -9 would: no request of its reaches the
// cluster any more; its goroutines end.
func (w *shardWorld) kill(name string) {
	r := w.replicas[name]
	r.killed.Store(true)
	r.cancel()
	<-r.done
	w.mu.Lock()
	delete(w.replicas, name)
	w.mu.Unlock()
}

// stop stops a replica gracefully.
func (w *shardWorld) stop(name string) {
	r := w.replicas[name]
	r.cancel()
	if err := <-r.done; err != nil {
		w.t.Errorf("replica %s: %v", name, err)
	}
	w.mu.Lock()
	delete(w.replicas, name)
	w.mu.Unlock()
}

// record is the assignment as last written.
func (w *shardWorld) record() (shard.Assignment, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.records) == 0 {
		return shard.Assignment{}, false
	}
	return w.records[len(w.records)-1].a, true
}

// assignedTo reports whether every range is assigned to a live replica,
// each of want replicas with a fair share.
func (w *shardWorld) assigned(want int) bool {
	a, ok := w.record()
	if !ok {
		return false
	}
	per := map[string]int{}
	for _, o := range a.Owners {
		w.mu.Lock()
		_, live := w.replicas[o.Member]
		w.mu.Unlock()
		if !live {
			return false
		}
		per[o.Member]++
	}
	if len(per) != want {
		return false
	}
	for _, n := range per {
		if n < a.Ranges/want || n > (a.Ranges+want-1)/want {
			return false
		}
	}
	return true
}

// waitFor lets virtual time pass a second at a time until cond holds.
func (w *shardWorld) waitFor(what string, cond func() bool, limit time.Duration) time.Duration {
	w.t.Helper()
	return w.waitEvery(time.Second, what, cond, limit)
}

// waitConverged waits for every Deployment to run image, checking every
// second (at the scale every 5 s: a check lists every pod).
func (w *shardWorld) waitConverged(ctx context.Context, image string, limit time.Duration) time.Duration {
	w.t.Helper()
	step := time.Second
	if w.scale.deployments >= 1000 {
		step = 5 * time.Second
	}
	return w.waitEvery(step, "Deployments rolled out to "+image, func() bool { ok, _ := w.converged(ctx, image); return ok }, limit)
}

func (w *shardWorld) waitEvery(step time.Duration, what string, cond func() bool, limit time.Duration) time.Duration {
	w.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			w.t.Fatalf("%s: not after %v of virtual time", what, limit)
		}
		time.Sleep(step)
	}
	return time.Since(start)
}

func (w *shardWorld) namespace(i int) string { return fmt.Sprintf("ns-%03d", i) }

func (w *shardWorld) createNamespaces(ctx context.Context) {
	for i := range w.scale.namespaces {
		if _, err := w.c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace(i)}}, metav1.CreateOptions{}); err != nil {
			w.t.Fatalf("%v", err)
		}
	}
}

func shardDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	zero := int64(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "app", Image: image}}}}},
	}
}

func (w *shardWorld) createDeployments(ctx context.Context) {
	for i := range w.scale.deployments {
		ns := w.namespace(i % w.scale.namespaces)
		if _, err := w.c.Deployments(ns).Create(ctx, shardDeployment(fmt.Sprintf("web-%04d", i), int32(w.scale.replicas), "nginx:1.27"), metav1.CreateOptions{}); err != nil {
			w.t.Fatalf("%v", err)
		}
	}
}

// rollout changes every Deployment's image.
func (w *shardWorld) rollout(ctx context.Context, image string) {
	ds, _, err := w.c.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("%v", err)
	}
	for _, d := range ds {
		d.Spec.Template.Spec.Containers[0].Image = image
		if _, err := w.c.Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			w.t.Fatalf("%v", err)
		}
	}
}

// converged reports whether every Deployment has rolled out image: its
// status observed, all replicas updated and available, and exactly
// replicas pods of that image and none other (no pod lost, none extra).
func (w *shardWorld) converged(ctx context.Context, image string) (bool, string) {
	ds, _, err := w.c.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	if len(ds) != w.scale.deployments {
		return false, fmt.Sprintf("%d Deployments", len(ds))
	}
	want := int32(w.scale.replicas)
	for _, d := range ds { // the statuses first: listing every pod costs more
		if s := d.Status; s.ObservedGeneration != d.Generation || s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
			return false, fmt.Sprintf("%s/%s status %+v", d.Namespace, d.Name, s)
		}
	}
	pods, _, err := w.c.Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	byApp := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			byApp[p.Namespace+"/"+p.Labels["app"]] = append(byApp[p.Namespace+"/"+p.Labels["app"]], p)
		}
	}
	for _, d := range ds {
		s := d.Status
		if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
			return false, fmt.Sprintf("%s/%s status %+v", d.Namespace, d.Name, s)
		}
		ps := byApp[d.Namespace+"/"+d.Name]
		if len(ps) != w.scale.replicas {
			return false, fmt.Sprintf("%s/%s has %d pods", d.Namespace, d.Name, len(ps))
		}
		for _, p := range ps {
			if p.Spec.Containers[0].Image != image {
				return false, fmt.Sprintf("%s/%s runs %s", p.Namespace, p.Name, p.Spec.Containers[0].Image)
			}
		}
	}
	return true, ""
}

// outsideTenure returns the replicas' writes made while the assignment
// did not give the namespace's range to them (at the position of the
// write in the cluster's order of requests and record updates). The
// record is one sequence, so the tenures of two replicas never overlap:
// with no write outside its writer's tenure, no two replicas write
// objects of one namespace in overlapping intervals.
func (w *shardWorld) outsideTenure() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	r := 0
	for _, wr := range w.writes {
		for r+1 < len(w.records) && w.records[r+1].seq < wr.seq {
			r++
		}
		if len(w.records) == 0 || w.records[r].seq > wr.seq {
			out = append(out, fmt.Sprintf("%s %s %s/%s by %s before any assignment", wr.verb, wr.resource, wr.namespace, wr.obj, wr.replica))
			continue
		}
		a := w.records[r].a
		i := rangeOf(a, wr.namespace)
		if owner := a.Owners[i].Member; owner != wr.replica {
			out = append(out, fmt.Sprintf("%s %s %s/%s by %s while range %d was %q's", wr.verb, wr.resource, wr.namespace, wr.obj, wr.replica, i, owner))
		}
	}
	return out
}

func rangeOf(a shard.Assignment, ns string) int {
	h := shard.Hash(ns)
	i := 0
	for k, s := range a.Starts {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if err == nil && v <= h {
			i = k
		}
	}
	return i
}

// syncs returns the syncs the replicas' controllers made, all replicas.
func syncsOf(m *kube.Metrics) float64 {
	fams, err := m.Gatherer().Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != "ctrlkit_syncs_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			total += mt.GetCounter().GetValue()
		}
	}
	return total
}

func metricValue(m *kube.Metrics, name, label, value string) float64 {
	fams, err := m.Gatherer().Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			ok := label == ""
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					ok = true
				}
			}
			if !ok {
				continue
			}
			if c := mt.GetCounter(); c != nil {
				total += c.GetValue()
			}
			if g := mt.GetGauge(); g != nil {
				total += g.GetValue()
			}
		}
	}
	return total
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// leaseGone reports whether the killed replica's entries are all gone
// from the record.
func (w *shardWorld) noEntryOf(name string) bool {
	a, ok := w.record()
	if !ok {
		return false
	}
	return !slices.ContainsFunc(a.Owners, func(o shard.Owner) bool { return o.Member == name })
}
