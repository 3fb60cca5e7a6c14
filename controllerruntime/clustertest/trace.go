package clustertest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/planner"
)

// recorder keeps the trace of a Cluster: every write the API server
// stored and every event, with its virtual time, and the states of every
// Deployment and its ReplicaSets for planner.Check.
type recorder struct {
	start time.Time

	mu    sync.Mutex
	lines []string
	rss   map[types.NamespacedName]*appsv1.ReplicaSet
	deps  map[types.NamespacedName]*appsv1.Deployment
	snaps map[types.NamespacedName][]planner.Snapshot
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), rss: map[types.NamespacedName]*appsv1.ReplicaSet{},
		deps: map[types.NamespacedName]*appsv1.Deployment{}, snaps: map[types.NamespacedName][]planner.Snapshot{}}
}

// at is the virtual time since the cluster started, as a trace shows it.
func (r *recorder) at() string { return "+" + time.Since(r.start).String() }

// write records a stored write; memcluster calls it with its lock held.
func (r *recorder) write(w memcluster.Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := types.NamespacedName{Namespace: w.Object.GetNamespace(), Name: w.Object.GetName()}
	line := fmt.Sprintf("%s %s %s %s rv=%d", r.at(), strings.ToLower(string(w.Type)), w.Resource, key, w.ResourceVersion)
	if w.Type == watch.Added {
		line += eventText(w.Object)
	}
	r.lines = append(r.lines, line)
	switch obj := w.Object.(type) {
	case *appsv1.Deployment:
		if w.Type == watch.Deleted {
			delete(r.deps, key)
			return
		}
		r.deps[key] = obj
		r.snapLocked(key)
	case *appsv1.ReplicaSet:
		if w.Type == watch.Deleted {
			delete(r.rss, key)
		} else {
			r.rss[key] = obj
		}
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == "Deployment" {
			r.snapLocked(types.NamespacedName{Namespace: key.Namespace, Name: ref.Name})
		}
	}
}

// eventText is the reason and message of an Event object, for the trace.
func eventText(obj runtime.Object) string {
	switch e := obj.(type) {
	case *corev1.Event:
		return fmt.Sprintf(" %s %s %s/%s: %s", e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	case *eventsv1.Event:
		return fmt.Sprintf(" %s %s %s/%s: %s", e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
	}
	return ""
}

// snapLocked records the state of Deployment key and its ReplicaSets.
func (r *recorder) snapLocked(key types.NamespacedName) {
	d := r.deps[key]
	if d == nil {
		return
	}
	var rss []*appsv1.ReplicaSet
	for k, rs := range r.rss {
		if k.Namespace == key.Namespace && metav1.IsControlledBy(rs, d) {
			rss = append(rss, rs)
		}
	}
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int { return cmp.Compare(a.Name, b.Name) })
	r.snaps[key] = append(r.snaps[key], planner.Snapshot{Time: time.Now(), Deployment: d, ReplicaSets: rss})
}

// event records an event of a built-in controller (they record events in
// the trace rather than as Event objects).
func (r *recorder) event(component string, obj runtime.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := "?"
	if m := metaOf(obj); m != nil {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	r.lines = append(r.lines, fmt.Sprintf("%s event %s %s %s %s: %s", r.at(), component, eventType, reason, name, message))
}

// Trace returns what happened so far, one line per write the API server
// stored ("+1.5s added pods default/web-7d9f-x2k4q rv=42"; an Event's
// reason and message follow its key) and per event of the built-in
// controllers ("+1.5s event replicaset-controller Normal SuccessfulCreate
// default/web-7d9f: Created pod: ..."), in order, with the virtual time
// since the cluster started. With the default Options, the same test gives
// the same trace run after run.
func (c *Cluster) Trace() []string {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	return slices.Clone(c.rec.lines)
}

// Check runs planner.Check on every state the Deployments of the cluster
// went through (every write of a Deployment or of one of its ReplicaSets):
// surge and availability bounds, revisions, completion. It returns an error
// listing the violations, or nil.
func (c *Cluster) Check() error {
	c.rec.mu.Lock()
	snaps := maps.Clone(c.rec.snaps)
	c.rec.mu.Unlock()
	var errs []error
	for _, key := range slices.SortedFunc(maps.Keys(snaps), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}) {
		s := snaps[key]
		trace, err := planner.TraceFrom(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("deployment %s: %w", key, err))
			continue
		}
		for _, v := range planner.Check(trace, s[len(s)-1].Deployment) {
			errs = append(errs, fmt.Errorf("deployment %s: %s", key, v))
		}
	}
	return errors.Join(errs...)
}
