package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/watchproto"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// record is one watch event, of any of the three kinds.
type record struct {
	rv  uint64
	typ watch.EventType
	obj runtime.Object
}

// recorder keeps every watch event of Deployments, ReplicaSets and pods,
// and the latest state of each object.
type recorder struct {
	mu     sync.Mutex
	events []record
	cur    *state
}

func newRecorder() *recorder { return &recorder{cur: newState()} }

// start watches the three kinds from the cluster's current version, on wg
// until ctx ends.
func (r *recorder) start(ctx context.Context, wg *sync.WaitGroup, c *memcluster.Cluster) {
	rv := c.ResourceVersion()
	src := clock.NewSource(c.Clock(), "e2e recorder")
	for _, f := range []func(clock.Work, <-chan struct{}){
		func(w clock.Work, turn <-chan struct{}) { follow(ctx, r, c.Clock(), c.Deployments(""), rv, w, turn) },
		func(w clock.Work, turn <-chan struct{}) { follow(ctx, r, c.Clock(), c.ReplicaSets(""), rv, w, turn) },
		func(w clock.Work, turn <-chan struct{}) { follow(ctx, r, c.Clock(), c.Pods(""), rv, w, turn) },
	} {
		// Tracked work until the first watch is open: the simulation must
		// not judge the recorded history before the recorder has started.
		turn := make(chan struct{})
		w, now := src.Start(func() { close(turn) })
		if now {
			close(turn)
		}
		wg.Go(func() { f(w, turn) })
	}
}

// follow records the events of one kind after rv, watching again whenever
// a watch ends (dropped by fault injection, say) until ctx ends. A failed
// Watch (an injected fault) is retried after a second of cluster time, so
// that the recorder never spins.
//
// The recorder is tracked work on a fake clock (see clock.Source): from
// its start until its first watch is open, from the end of a watch until
// the next is open, and for each event until it is recorded. So a
// simulation never judges the history while the recorder is behind.
func follow[T memcluster.Object](ctx context.Context, r *recorder, clk clock.Clock, cl memcluster.Client[T], rv string, work clock.Work, turn <-chan struct{}) {
	defer func() { work.Done() }()
	select {
	case <-turn:
	case <-ctx.Done():
		return
	}
	src := clock.NewSource(clk, "e2e recorder")
	for ctx.Err() == nil {
		w, err := cl.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			_ = clock.Sleep(ctx, clk, time.Second) // only ctx's end stops it
			continue
		}
		acks := w.(watchproto.AckWatcher)
		acks.AckEvents()
		work.Done()
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(T)
			if !ok {
				continue // an error event: the watch ends
			}
			rv = obj.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				n, err := strconv.ParseUint(rv, 10, 64)
				if err != nil {
					panic(fmt.Sprintf("e2e: resourceVersion %q: %v", rv, err))
				}
				r.add(record{rv: n, typ: ev.Type, obj: obj})
			}
			acks.Ack()
		}
		work = src.Begin() // before Stop finishes the work of the watch's end
		w.Stop()
	}
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, rec)
	r.cur.apply(rec)
}

// history returns every event recorded, in resourceVersion order.
func (r *recorder) history() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := slices.Clone(r.events)
	slices.SortFunc(h, func(a, b record) int { return cmp.Compare(a.rv, b.rv) })
	return h
}

// snapshot returns a copy of the latest state.
func (r *recorder) snapshot() *state {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.clone()
}

// problem is the latest state's [state.problem].
func (r *recorder) problem() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.problem()
}

// describe renders the latest state, for failure messages.
func (r *recorder) describe() string { return r.snapshot().String() }

// state is a set of objects by UID, as of some point of the history.
type state struct {
	deps map[types.UID]*appsv1.Deployment
	rss  map[types.UID]*appsv1.ReplicaSet
	pods map[types.UID]*corev1.Pod
}

func newState() *state {
	return &state{deps: map[types.UID]*appsv1.Deployment{}, rss: map[types.UID]*appsv1.ReplicaSet{}, pods: map[types.UID]*corev1.Pod{}}
}

func (s *state) clone() *state {
	c := newState()
	for k, v := range s.deps {
		c.deps[k] = v
	}
	for k, v := range s.rss {
		c.rss[k] = v
	}
	for k, v := range s.pods {
		c.pods[k] = v
	}
	return c
}

// apply stores one event's object, or forgets it.
func (s *state) apply(rec record) {
	switch o := rec.obj.(type) {
	case *appsv1.Deployment:
		put(s.deps, rec.typ, o)
	case *appsv1.ReplicaSet:
		put(s.rss, rec.typ, o)
	case *corev1.Pod:
		put(s.pods, rec.typ, o)
	}
}

func put[T metav1.Object](m map[types.UID]T, typ watch.EventType, obj T) {
	if typ == watch.Deleted {
		delete(m, obj.GetUID())
		return
	}
	m[obj.GetUID()] = obj
}

// liveState lists the cluster.
func liveState(ctx context.Context, c *memcluster.Cluster) (*state, error) {
	s := newState()
	deps, _, err := c.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rss, _, err := c.ReplicaSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, _, err := c.Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		s.deps[d.UID] = d
	}
	for _, rs := range rss {
		s.rss[rs.UID] = rs
	}
	for _, p := range pods {
		s.pods[p.UID] = p
	}
	return s, nil
}

// owned groups ReplicaSets by the UID of their controller and pods by the
// UID of theirs.
func (s *state) owned() (rssOf map[types.UID][]*appsv1.ReplicaSet, podsOf map[types.UID][]*corev1.Pod) {
	rssOf, podsOf = map[types.UID][]*appsv1.ReplicaSet{}, map[types.UID][]*corev1.Pod{}
	for _, rs := range s.rss {
		if ref := metav1.GetControllerOf(rs); ref != nil {
			rssOf[ref.UID] = append(rssOf[ref.UID], rs)
		}
	}
	for _, p := range s.pods {
		if ref := metav1.GetControllerOf(p); ref != nil {
			podsOf[ref.UID] = append(podsOf[ref.UID], p)
		}
	}
	return rssOf, podsOf
}

// problem says why the state is not converged, or "" if it is: every
// Deployment rolled out, with exactly its replicas of Ready pods in its
// new ReplicaSet, old ReplicaSets empty, no pod terminating, and no
// object whose controller is gone.
func (s *state) problem() string {
	rssOf, podsOf := s.owned()
	for _, d := range s.sortedDeployments() {
		if p := deploymentProblem(d, rssOf[d.UID], podsOf); p != "" {
			return fmt.Sprintf("deployment %s: %s", d.Name, p)
		}
	}
	for _, rs := range s.rss {
		if ref := metav1.GetControllerOf(rs); ref != nil && s.deps[ref.UID] == nil {
			return fmt.Sprintf("rs %s: its deployment is gone", rs.Name)
		}
	}
	for _, p := range s.pods {
		if p.DeletionTimestamp != nil {
			return fmt.Sprintf("pod %s: terminating", p.Name)
		}
		if ref := metav1.GetControllerOf(p); ref != nil && s.rss[ref.UID] == nil {
			return fmt.Sprintf("pod %s: its replicaset is gone", p.Name)
		}
	}
	return ""
}

func deploymentProblem(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, podsOf map[types.UID][]*corev1.Pod) string {
	want := *d.Spec.Replicas
	if d.Status.ObservedGeneration < d.Generation {
		return fmt.Sprintf("generation %d not observed (%d)", d.Generation, d.Status.ObservedGeneration)
	}
	if !rollout.DeploymentComplete(d, d.Status) {
		return fmt.Sprintf("not complete: %+v", d.Status)
	}
	news := 0
	old := 0
	for _, rs := range rss {
		if rs.Status.ObservedGeneration < rs.Generation {
			return fmt.Sprintf("rs %s: generation %d not observed", rs.Name, rs.Generation)
		}
		var active, ready int32
		for _, p := range podsOf[rs.UID] {
			if p.DeletionTimestamp == nil {
				active++
				if podReady(p) {
					ready++
				}
			}
		}
		if rollout.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			news++
			if *rs.Spec.Replicas != want || rs.Status.Replicas != want || rs.Status.AvailableReplicas != want || active != want || ready != want {
				return fmt.Sprintf("new rs %s: spec %d, status %d/%d available, %d pods, %d ready; want %d",
					rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, rs.Status.AvailableReplicas, active, ready, want)
			}
			continue
		}
		old++
		if *rs.Spec.Replicas != 0 || rs.Status.Replicas != 0 || active != 0 {
			return fmt.Sprintf("old rs %s: spec %d, status %d, %d pods", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, active)
		}
	}
	if news != 1 {
		return fmt.Sprintf("%d ReplicaSets with the current template", news)
	}
	if limit := d.Spec.RevisionHistoryLimit; limit != nil && old > int(*limit) {
		return fmt.Sprintf("%d old ReplicaSets kept, limit %d", old, *limit)
	}
	return ""
}

func (s *state) sortedDeployments() []*appsv1.Deployment {
	ds := make([]*appsv1.Deployment, 0, len(s.deps))
	for _, d := range s.deps {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	return ds
}

// String describes the Deployments that are not converged (at most five)
// with their ReplicaSets.
func (s *state) String() string {
	rssOf, podsOf := s.owned()
	var b strings.Builder
	shown := 0
	for _, d := range s.sortedDeployments() {
		p := deploymentProblem(d, rssOf[d.UID], podsOf)
		if p == "" {
			continue
		}
		if shown++; shown > 5 {
			b.WriteString("...\n")
			break
		}
		fmt.Fprintf(&b, "deployment %s gen %d/%d replicas %d paused %v image %s: %s\n", d.Name, d.Status.ObservedGeneration, d.Generation,
			*d.Spec.Replicas, d.Spec.Paused, d.Spec.Template.Spec.Containers[0].Image, p)
		for _, c := range d.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, rs := range rssOf[d.UID] {
			pods := podsOf[rs.UID]
			term := 0
			for _, p := range pods {
				if p.DeletionTimestamp != nil {
					term++
				}
			}
			fmt.Fprintf(&b, "  rs %s rev %s image %s spec %d status %d ready %d avail %d gen %d/%d pods %d (%d terminating)\n",
				rs.Name, rs.Annotations[rollout.RevisionAnnotation], rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas,
				rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, rs.Status.ObservedGeneration, rs.Generation, len(pods), term)
		}
	}
	if shown == 0 {
		if p := s.problem(); p != "" {
			b.WriteString(p + "\n")
		}
	}
	return b.String()
}

// podReady reports whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
