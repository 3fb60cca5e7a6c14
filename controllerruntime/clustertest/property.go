package clustertest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/planner"
)

// A Property is an invariant [Explore] checks on every bench.
//
// Always is checked at every step that stored a write: once the step's
// goroutine and everything it woke are blocked again, before the next
// step. It reads the cluster's stored state (and the writes of the step)
// from its [State], never through a client: the cluster is paused while
// it runs. It must be quick (it runs thousands of times per bench) and
// must not keep what State returns.
//
// AtEnd is checked once the scenario has returned (and passed): it may
// use the cluster as a test does (RunUntil, a client's reads), for
// properties that hold eventually.
//
// Return nil when the property holds, else an error saying why, naming
// the objects: it is the report's message.
type Property struct {
	Name   string
	Always func(s *State) error
	AtEnd  func(c *Cluster) error

	needsBasis bool // NoLostUpdates: follow what each client has seen
}

// State is the cluster's stored state at a step, for [Property.Always].
type State struct {
	c      *Cluster
	k      *checker // nil outside Explore's checks
	step   uint64
	writes []Written
}

// Written is a write the cluster stored, and who made it (the client of
// the step: "replicaset-controller", "manager", "client", ...).
type Written struct {
	memcluster.Write
	By string
	// Verb is the verb of the REST request whose object this is (an
	// update, a patch, ...); "" for a write that is a consequence of a
	// request (a garbage collection, say) or of a built-in controller.
	Verb string
	// Precondition is the resourceVersion that request carried
	// (metadata.resourceVersion of an update's or a patch's body), ""
	// for none.
	Precondition string
	// Previous is the resourceVersion the object had before the write (0
	// for a create), and PreviousBy the client that wrote it.
	Previous   uint64
	PreviousBy string
	// Based is the newest version of the object By had seen before the
	// write (see [NoLostUpdates]; 0 if unknown, or not followed).
	Based uint64
}

// Step is the number of the step just taken.
func (s *State) Step() uint64 { return s.step }

// Now is the virtual time since the cluster started.
func (s *State) Now() time.Duration { return s.c.Now() }

// Writes are the writes of the step just taken, in order.
func (s *State) Writes() []Written { return s.writes }

// Objects returns the stored objects of resource ("pods", "webapps"), by
// namespace and name. They are the cluster's: do not modify them.
func (s *State) Objects(resource string) []memcluster.Object {
	r := s.c.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	objs := r.objs[resource]
	out := make([]memcluster.Object, 0, len(objs))
	for _, k := range slices.SortedFunc(maps.Keys(objs), compareKeys) {
		out = append(out, objs[k])
	}
	return out
}

// Get returns the stored object of resource, or nil.
func (s *State) Get(resource, namespace, name string) memcluster.Object {
	r := s.c.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.objs[resource][types.NamespacedName{Namespace: namespace, Name: name}]
}

// ObjectsOf returns the stored objects of resource of type T (the
// others, if any, are left out).
func ObjectsOf[T memcluster.Object](s *State, resource string) []T {
	var out []T
	for _, o := range s.Objects(resource) {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// checker checks a bench's properties for Explore.
type checker struct {
	p     *probe
	props []Property

	mu     sync.Mutex
	c      *Cluster  // set once the cluster has started
	writes []Written // since the last check
	// The resourceVersion of every stored object, and who wrote it.
	stored   map[objectRef]uint64
	storedBy map[objectRef]string
	seen     basis // nil unless a property needs it
	// The planner's trace of each Deployment, as far as checked (see
	// traceOf).
	traces map[types.NamespacedName]*planner.TraceBuilder

	// The spec.replicas of each ReplicaSet, and the range it took at the
	// current instant (for NoExtraPods and NoLostPods: a controller's
	// sync decides on the spec it read at the start of the instant).
	instant time.Time
	specs   map[types.UID]int32
	ranges  map[types.UID][2]int32
}

// track follows the ReplicaSets' spec.replicas through the step's writes.
func (k *checker) track(writes []Written) {
	if now := time.Now(); !now.Equal(k.instant) {
		k.instant = now
		clear(k.ranges)
	}
	if k.specs == nil {
		k.specs, k.ranges = map[types.UID]int32{}, map[types.UID][2]int32{}
	}
	for _, w := range writes {
		rs, ok := w.Object.(*appsv1.ReplicaSet)
		if !ok {
			continue
		}
		n := replicasOf(rs)
		r, ok := k.ranges[rs.UID]
		if !ok {
			r = [2]int32{n, n}
			if old, ok := k.specs[rs.UID]; ok {
				r = [2]int32{min(n, old), max(n, old)}
			}
		}
		k.ranges[rs.UID] = [2]int32{min(r[0], n), max(r[1], n)}
		k.specs[rs.UID] = n
		if w.Type == watch.Deleted {
			delete(k.specs, rs.UID)
		}
	}
}

// replicasRange is the least and the most spec.replicas rs had at the
// current instant.
func (s *State) replicasRange(rs *appsv1.ReplicaSet) (lo, hi int32) {
	n := replicasOf(rs)
	if s.k == nil {
		return n, n
	}
	if r, ok := s.k.ranges[rs.UID]; ok {
		return r[0], r[1]
	}
	return n, n
}

// attach makes k check c's steps.
func (k *checker) attach(c *Cluster) {
	k.mu.Lock()
	k.c = c
	k.mu.Unlock()
	c.sched.mu.Lock()
	c.sched.quiet = k.quiet
	c.sched.stepped = k.stepped
	c.sched.mu.Unlock()
}

// wrote is called for every stored write, in the writer's goroutine
// (from the start of the cluster: Options.onWrite).
func (k *checker) wrote(w memcluster.Write) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ref := objectRef{w.Resource, types.NamespacedName{Namespace: w.Object.GetNamespace(), Name: w.Object.GetName()}}
	if k.stored == nil {
		k.stored, k.storedBy = map[objectRef]uint64{}, map[objectRef]string{}
	}
	prev, prevBy := k.stored[ref], k.storedBy[ref]
	if w.Type == watch.Deleted {
		delete(k.stored, ref)
		delete(k.storedBy, ref)
	} else {
		k.stored[ref] = w.ResourceVersion
	}
	if k.c == nil {
		return // the cluster is starting: no step yet
	}
	out := Written{Write: w, Previous: prev, PreviousBy: prevBy}
	if s := k.c.sched.cause(); s != nil {
		out.By = s.client
		if st := s.step; s.call != nil && st.Kind == gate.StepRequest && st.Resource == w.Resource &&
			st.Namespace == ref.key.Namespace && st.Name == ref.key.Name {
			out.Verb, out.Precondition = string(st.Verb), s.call.precondition
		}
	}
	if w.Type != watch.Deleted {
		k.storedBy[ref] = out.By
	}
	if k.seen != nil && out.By != "" {
		out.Based = k.seen[out.By][ref]
		k.seen.saw(out.By, ref, w.ResourceVersion)
	}
	k.writes = append(k.writes, out)
}

// quiet checks the Always properties once the last step has settled.
func (k *checker) quiet(step uint64) {
	k.mu.Lock()
	writes := k.writes
	k.writes = nil
	k.mu.Unlock()
	if len(writes) == 0 || k.p.violated() {
		return
	}
	k.track(writes)
	s := &State{c: k.c, k: k, step: step, writes: writes}
	for _, prop := range k.props {
		if prop.Always == nil {
			continue
		}
		if err := prop.Always(s); err != nil {
			k.p.record(prop.Name, step, err.Error(), k.c.Trace())
			k.c.sched.mu.Lock()
			k.c.sched.haltWithLocked(errViolated)
			k.c.sched.mu.Unlock()
			return
		}
	}
}

// atEnd checks the AtEnd properties.
func (k *checker) atEnd() {
	for _, prop := range k.props {
		if prop.AtEnd == nil {
			continue
		}
		if err := prop.AtEnd(k.c); err != nil {
			k.p.record(prop.Name, 0, err.Error(), k.c.Trace())
			return
		}
	}
}

// NoExtraPods fails when a pod is created for a ReplicaSet that had
// spec.replicas active pods already (not terminating, not finished): the
// mistake of a controller that reads a cache behind its own creates. The
// largest spec.replicas the ReplicaSet had at the current instant counts
// (a sync that decided on it at the start of the instant may still be
// creating pods the ReplicaSet no longer wants, as upstream's slow-start
// batches do).
func NoExtraPods() Property {
	return Property{Name: "no extra pods", Always: func(s *State) error {
		for _, w := range s.writes {
			if w.Resource != "pods" || w.Type != watch.Added {
				continue
			}
			rs := ownerReplicaSet(s, w.Object)
			if rs == nil {
				continue
			}
			if n, want := activePods(s, rs), replicasHigh(s, rs); n > want {
				return fmt.Errorf("pod %s/%s created by %s for replicaset %s, which has %d active pods for spec.replicas %d",
					w.Object.GetNamespace(), w.Object.GetName(), cmp.Or(w.By, "?"), rs.Name, n, want)
			}
		}
		return nil
	}}
}

// NoLostPods fails when the ReplicaSet controller deletes a pod of a
// ReplicaSet that then has fewer active pods than spec.replicas: the
// mistake of a controller that deletes again after an ambiguous error.
// The least spec.replicas the ReplicaSet had at the current instant
// counts (a scale-down decided before a scale-up at the same instant).
func NoLostPods() Property {
	return Property{Name: "no lost pods", Always: func(s *State) error {
		for _, w := range s.writes {
			if w.Resource != "pods" || w.By != "replicaset-controller" {
				continue
			}
			if w.Type != watch.Deleted && w.Object.GetDeletionTimestamp() == nil {
				continue
			}
			rs := ownerReplicaSet(s, w.Object)
			if rs == nil || rs.DeletionTimestamp != nil {
				continue
			}
			if n, want := activePods(s, rs), replicasLow(s, rs); n < want {
				return fmt.Errorf("pod %s/%s deleted by %s from replicaset %s, which has %d active pods left for spec.replicas %d",
					w.Object.GetNamespace(), w.Object.GetName(), w.By, rs.Name, n, want)
			}
		}
		return nil
	}}
}

// Converges fails when, once the scenario has returned, the cluster does
// not settle within limit of virtual time: every Deployment rolled out
// (its status at its generation, every replica updated and available)
// and every ReplicaSet with spec.replicas active pods.
func Converges(limit time.Duration) Property {
	return Property{Name: "converges", AtEnd: func(c *Cluster) error {
		var why string
		err := c.RunUntil(func() bool {
			why = c.unconverged()
			return why == ""
		}, limit)
		if err != nil {
			return fmt.Errorf("not converged %v after the scenario: %s", limit, why)
		}
		return nil
	}}
}

// unconverged says what is not converged, or "".
func (c *Cluster) unconverged() string {
	s := &State{c: c}
	var out []string
	for _, d := range ObjectsOf[*appsv1.Deployment](s, "deployments") {
		st, want := d.Status, replicasOfDeployment(d)
		if d.Generation > st.ObservedGeneration || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
			out = append(out, fmt.Sprintf("deployment %s/%s: generation %d observed %d, %d replicas, %d updated, %d available, want %d",
				d.Namespace, d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, want))
		}
	}
	for _, rs := range ObjectsOf[*appsv1.ReplicaSet](s, "replicasets") {
		if n, want := activePods(s, rs), replicasOf(rs); n != want && rs.DeletionTimestamp == nil {
			out = append(out, fmt.Sprintf("replicaset %s/%s: %d active pods, spec.replicas %d", rs.Namespace, rs.Name, n, want))
		}
	}
	return strings.Join(out, "; ")
}

func ownerReplicaSet(s *State, pod memcluster.Object) *appsv1.ReplicaSet {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, _ := s.Get("replicasets", pod.GetNamespace(), ref.Name).(*appsv1.ReplicaSet)
	if rs == nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// activePods counts the pods rs controls that are neither terminating nor
// finished.
func activePods(s *State, rs *appsv1.ReplicaSet) int32 {
	var n int32
	for _, p := range ObjectsOf[*corev1.Pod](s, "pods") {
		if p.Namespace != rs.Namespace || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == rs.UID {
			n++
		}
	}
	return n
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func replicasOfDeployment(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func replicasHigh(s *State, rs *appsv1.ReplicaSet) int32 { _, hi := s.replicasRange(rs); return hi }
func replicasLow(s *State, rs *appsv1.ReplicaSet) int32  { lo, _ := s.replicasRange(rs); return lo }
