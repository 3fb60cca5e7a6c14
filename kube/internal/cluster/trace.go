package cluster

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/planner"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Entry is one observed state of a ReplicaSet or a Deployment.
type Entry struct {
	At   time.Time
	Kind string // "rs" or "deploy"
	Type watch.EventType
	Name string
	// Spec is spec.replicas; Replicas, Updated, Ready and Available the
	// status counts (Updated only for Deployments).
	Spec, Replicas, Updated, Ready, Available int32
	// Revision is the deployment.kubernetes.io/revision annotation.
	Revision string
	// Conditions are a Deployment's conditions as type=status/reason.
	Conditions string
	// Generation and ObservedGeneration of a Deployment.
	Generation, ObservedGeneration int64
}

func (e Entry) String() string {
	if e.Kind == "rs" {
		return fmt.Sprintf("%s rs/%s spec=%d status=%d/%d/%d rev=%s", e.Type, e.Name, e.Spec, e.Replicas, e.Ready, e.Available, e.Revision)
	}
	return fmt.Sprintf("%s deploy/%s gen=%d/%d spec=%d status=%d up=%d ready=%d avail=%d %s",
		e.Type, e.Name, e.ObservedGeneration, e.Generation, e.Spec, e.Replicas, e.Updated, e.Ready, e.Available, e.Conditions)
}

// Recorder watches the Deployments and ReplicaSets of a namespace and
// keeps every state it sees, in order, and the latest of each object.
type Recorder struct {
	Client    kubernetes.Interface
	Namespace string
	// Pods also records every pod seen (see PodRecords).
	Pods bool
	// Objects keeps every state of the Deployments and ReplicaSets whole,
	// for Snapshots.
	Objects bool

	mu      sync.Mutex
	entries []Entry
	rss     map[string]*appsv1.ReplicaSet
	ds      map[string]*appsv1.Deployment
	changed chan struct{}
	pods    map[types.UID]*PodRecord
	objs    []objState
	expired int
}

// PodRecord is what a [Recorder] saw of one pod.
type PodRecord struct {
	UID  types.UID
	Name string
	// Owner is the name of the pod's controller (its ReplicaSet).
	Owner string
	// Created is when the recorder first saw it; Deleted when it saw it
	// go (zero while it exists, or if it went while no watch was open).
	Created, Deleted time.Time
}

type objState struct {
	at      time.Time
	obj     runtime.Object
	deleted bool
}

// Run records until ctx is done. Call it in a goroutine before the
// scenario writes anything, and wait for ready to be closed. A watch that
// the API server ends (a timeout, or a consumer too slow for its buffer) is
// resumed from the last resource version seen.
func (r *Recorder) Run(ctx context.Context, ready chan<- struct{}) {
	r.mu.Lock()
	r.rss, r.ds, r.changed = map[string]*appsv1.ReplicaSet{}, map[string]*appsv1.Deployment{}, make(chan struct{})
	r.pods = map[types.UID]*PodRecord{}
	r.mu.Unlock()
	rsWatch := func(rv string) (watch.Interface, error) {
		return r.Client.AppsV1().ReplicaSets(r.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	dWatch := func(rv string) (watch.Interface, error) {
		return r.Client.AppsV1().Deployments(r.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	podWatch := func(rv string) (watch.Interface, error) {
		return r.Client.CoreV1().Pods(r.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	rw, err1 := rsWatch("")
	dw, err2 := dWatch("")
	var pw watch.Interface
	var err3 error
	if r.Pods {
		pw, err3 = podWatch("")
	}
	close(ready)
	if err1 != nil || err2 != nil || err3 != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.follow(ctx, rw, rsWatch) })
	wg.Go(func() { r.follow(ctx, dw, dWatch) })
	if pw != nil {
		wg.Go(func() { r.follow(ctx, pw, podWatch) })
	}
	wg.Wait()
}

// follow consumes w, and re-watches with open until ctx is done.
func (r *Recorder) follow(ctx context.Context, w watch.Interface, open func(rv string) (watch.Interface, error)) {
	for {
		rv := r.consume(ctx, w)
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		var err error
		for w, err = open(rv); err != nil; w, err = open(rv) {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// consume records the events of w until it ends, and returns the last
// resource version seen ("" after an error event: start over).
func (r *Recorder) consume(ctx context.Context, w watch.Interface) (rv string) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv
		case ev, ok = <-w.ResultChan():
			if !ok {
				return rv
			}
		}
		if ev.Type == watch.Error {
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
				r.mu.Lock()
				r.expired++
				r.mu.Unlock()
			}
			return ""
		}
		if m, err := meta.Accessor(ev.Object); err == nil {
			rv = m.GetResourceVersion()
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		r.record(ev)
	}
}

func (r *Recorder) record(ev watch.Event) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Objects {
		switch ev.Object.(type) {
		case *appsv1.ReplicaSet, *appsv1.Deployment:
			r.objs = append(r.objs, objState{at: now, obj: ev.Object, deleted: ev.Type == watch.Deleted})
		}
	}
	switch o := ev.Object.(type) {
	case *corev1.Pod:
		p := r.pods[o.UID]
		if p == nil {
			p = &PodRecord{UID: o.UID, Name: o.Name, Created: now}
			if ref := metav1.GetControllerOf(o); ref != nil {
				p.Owner = ref.Name
			}
			r.pods[o.UID] = p
		}
		if ev.Type == watch.Deleted && p.Deleted.IsZero() {
			p.Deleted = now
		}
		return // pods do not wake waiters
	case *appsv1.ReplicaSet:
		e := Entry{At: now, Kind: "rs", Type: ev.Type, Name: o.Name, Spec: deref(o.Spec.Replicas),
			Replicas: o.Status.Replicas, Ready: o.Status.ReadyReplicas, Available: o.Status.AvailableReplicas,
			Revision: o.Annotations["deployment.kubernetes.io/revision"]}
		r.entries = append(r.entries, e)
		if ev.Type == watch.Deleted {
			delete(r.rss, o.Name)
		} else {
			r.rss[o.Name] = o
		}
	case *appsv1.Deployment:
		var conds []string
		for _, c := range o.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		e := Entry{At: now, Kind: "deploy", Type: ev.Type, Name: o.Name, Spec: deref(o.Spec.Replicas),
			Replicas: o.Status.Replicas, Updated: o.Status.UpdatedReplicas, Ready: o.Status.ReadyReplicas,
			Available: o.Status.AvailableReplicas, Conditions: strings.Join(conds, ","),
			Generation: o.Generation, ObservedGeneration: o.Status.ObservedGeneration,
			Revision: o.Annotations["deployment.kubernetes.io/revision"]}
		r.entries = append(r.entries, e)
		if ev.Type == watch.Deleted {
			delete(r.ds, o.Name)
		} else {
			r.ds[o.Name] = o
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// PodRecords returns every pod seen so far.
func (r *Recorder) PodRecords() []PodRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PodRecord, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, *p)
	}
	return out
}

// Expired returns how many of the recorder's watches ended with 410 Gone
// (and were started over with a fresh list).
func (r *Recorder) Expired() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expired
}

// Snapshots returns, per Deployment, a [planner.Snapshot] of it and the
// ReplicaSets it controls for every state observed at or after since in
// which either changed (needs Objects), for planner.TraceFrom.
func (r *Recorder) Snapshots(since time.Time) map[string][]planner.Snapshot {
	r.mu.Lock()
	objs := slices.Clone(r.objs)
	r.mu.Unlock()
	inStorageOrder(objs)
	ds := map[string]*appsv1.Deployment{}
	rss := map[string]map[string]*appsv1.ReplicaSet{} // by owner, by name
	out := map[string][]planner.Snapshot{}
	snap := func(at time.Time, name string) {
		d := ds[name]
		if d == nil || at.Before(since) {
			return
		}
		owned := make([]*appsv1.ReplicaSet, 0, len(rss[name]))
		for _, rs := range rss[name] {
			owned = append(owned, rs)
		}
		slices.SortFunc(owned, func(a, b *appsv1.ReplicaSet) int { return strings.Compare(a.Name, b.Name) })
		out[name] = append(out[name], planner.Snapshot{Time: at, Deployment: d, ReplicaSets: owned})
	}
	for _, o := range objs {
		switch obj := o.obj.(type) {
		case *appsv1.Deployment:
			if o.deleted {
				delete(ds, obj.Name)
				continue
			}
			ds[obj.Name] = obj
			snap(o.at, obj.Name)
		case *appsv1.ReplicaSet:
			ref := metav1.GetControllerOf(obj)
			if ref == nil {
				continue
			}
			if rss[ref.Name] == nil {
				rss[ref.Name] = map[string]*appsv1.ReplicaSet{}
			}
			if o.deleted {
				delete(rss[ref.Name], obj.Name)
			} else {
				rss[ref.Name][obj.Name] = obj
			}
			snap(o.at, ref.Name)
		}
	}
	return out
}

// inStorageOrder sorts the states of objs into the order in which they
// were stored. The recorder watches Deployments and ReplicaSets on two
// watches, and nothing orders the events of one against the other's: a
// ReplicaSet the controller creates and scales a millisecond after a
// Deployment's template changed may arrive before the Deployment's event,
// and a snapshot pairing the old template with the new ReplicaSet takes
// that ReplicaSet for an old one. kube-apiserver's resourceVersions are
// etcd's revisions, one sequence for every resource, so they give the
// order (a test harness against a real API server may rely on that; a
// client in general may not). A state seen again (a watch started over
// after 410 Gone lists every object as ADDED) sorts beside its first
// sighting. Arrival times are made non-decreasing in the new order. Left
// as it is if any resourceVersion is not a number.
func inStorageOrder(objs []objState) {
	type stored struct {
		rev uint64
		s   objState
	}
	keyed := make([]stored, len(objs))
	for i, o := range objs {
		m, err := meta.Accessor(o.obj)
		if err != nil {
			return
		}
		rev, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		if err != nil {
			return
		}
		keyed[i] = stored{rev, o}
	}
	slices.SortStableFunc(keyed, func(a, b stored) int { return cmp.Compare(a.rev, b.rev) })
	for i := range keyed {
		objs[i] = keyed[i].s
		if i > 0 && objs[i].at.Before(objs[i-1].at) {
			objs[i].at = objs[i-1].at
		}
	}
}

// Snapshot is the latest observed state of the namespace.
type Snapshot struct {
	Deployments map[string]*appsv1.Deployment
	ReplicaSets map[string]*appsv1.ReplicaSet
}

// WaitFor waits until cond holds for the latest observed state, and returns
// when it first did (the arrival of the event that made it true).
func (r *Recorder) WaitFor(ctx context.Context, timeout time.Duration, cond func(Snapshot) bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		r.mu.Lock()
		s := Snapshot{maps.Clone(r.ds), maps.Clone(r.rss)}
		var at time.Time
		if n := len(r.entries); n > 0 {
			at = r.entries[n-1].At
		}
		ch := r.changed
		r.mu.Unlock()
		if cond(s) {
			return at, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("cluster: condition not met within %v; last entries:\n%s", timeout, r.tail(8))
		}
	}
}

func (r *Recorder) tail(n int) string {
	es := r.Entries()
	var b strings.Builder
	for _, e := range es[max(0, len(es)-n):] {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// Entries returns the observed states so far.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.entries)
}

// Since returns the entries observed at or after t.
func (r *Recorder) Since(t time.Time) []Entry {
	var out []Entry
	for _, e := range r.Entries() {
		if !e.At.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// SpecSequences returns, per ReplicaSet name, the successive values of
// spec.replicas observed in entries (repeats collapsed).
func SpecSequences(entries []Entry) map[string][]int32 {
	out := make(map[string][]int32)
	for _, e := range entries {
		if e.Kind != "rs" || e.Type == watch.Deleted {
			continue
		}
		s := out[e.Name]
		if len(s) == 0 || s[len(s)-1] != e.Spec {
			out[e.Name] = append(s, e.Spec)
		}
	}
	return out
}

// Complete reports whether d's rollout is done: observed, every replica
// updated and available, no old replicas left, and Progressing
// NewReplicaSetAvailable.
func Complete(d *appsv1.Deployment) bool {
	if d == nil || d.Status.ObservedGeneration < d.Generation {
		return false
	}
	want := deref(d.Spec.Replicas)
	s := d.Status
	if s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas != want || s.ReadyReplicas != want {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason == "NewReplicaSetAvailable"
		}
	}
	return d.Spec.ProgressDeadlineSeconds == nil
}

func deref(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
