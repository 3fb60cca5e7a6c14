package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	mu      sync.Mutex
	entries []Entry
	rss     map[string]*appsv1.ReplicaSet
	ds      map[string]*appsv1.Deployment
	changed chan struct{}
}

// Run records until ctx is done. Call it in a goroutine before the
// scenario writes anything, and wait for ready to be closed. A watch that
// the API server ends (a timeout, or a consumer too slow for its buffer) is
// resumed from the last resource version seen.
func (r *Recorder) Run(ctx context.Context, ready chan<- struct{}) {
	r.mu.Lock()
	r.rss, r.ds, r.changed = map[string]*appsv1.ReplicaSet{}, map[string]*appsv1.Deployment{}, make(chan struct{})
	r.mu.Unlock()
	rsWatch := func(rv string) (watch.Interface, error) {
		return r.Client.AppsV1().ReplicaSets(r.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	dWatch := func(rv string) (watch.Interface, error) {
		return r.Client.AppsV1().Deployments(r.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	rw, err1 := rsWatch("")
	dw, err2 := dWatch("")
	close(ready)
	if err1 != nil || err2 != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.follow(ctx, rw, rsWatch) })
	wg.Go(func() { r.follow(ctx, dw, dWatch) })
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
	switch o := ev.Object.(type) {
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
