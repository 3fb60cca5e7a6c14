package clustertest

import (
	"cmp"
	"context"
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

	"github.com/ctrlkit/ctrlkit/internal/gate"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/planner"
)

// recorder keeps the trace of a Cluster: every write the API server
// stored, every request it admitted, every event, with its time; the
// states of every Deployment and its ReplicaSets for planner.Check, with
// the write behind each; and the latest state of every object, for the
// answers that say what is stuck.
type recorder struct {
	start time.Time
	sched *scheduler

	mu       sync.Mutex
	entries  []entry
	objs     map[string]map[types.NamespacedName]memcluster.Object // by resource; the latest stored state
	rss      map[types.NamespacedName]*appsv1.ReplicaSet
	deps     map[types.NamespacedName]*appsv1.Deployment
	snaps    map[types.NamespacedName][]planner.Snapshot
	whys     map[types.NamespacedName][]why // the write behind each snapshot
	inflight map[objectKey]*call            // REST writes admitted and not answered yet
	unserved map[string]int                 // REST paths answered 404 before admission
	dropped  map[uint64]bool                // watches dropped
	failing  map[string]*failing            // requests failing in a row, by verb, resource and client
	changed  time.Time                      // when the last write was stored
}

// entry is one line of the trace. A REST request's line is written when
// it is admitted (so its place in the trace is that of its admission) and
// completed when it is answered.
type entry struct {
	text string
	at   string
	req  memcluster.Request
	cl   *call
}

// why is the write behind a snapshot: who made it and what it changed.
type why struct {
	by       string
	old, new runtime.Object // nil old: created; nil new: deleted
}

// failing counts the requests of one kind (verb, resource, client) that
// failed in a row, and tells the last.
type failing struct {
	n    int
	last string
}

type objectKey struct {
	resource  string
	namespace string
	name      string
}

func newRecorder(s *scheduler) *recorder {
	return &recorder{start: time.Now(), sched: s,
		objs:     map[string]map[types.NamespacedName]memcluster.Object{},
		rss:      map[types.NamespacedName]*appsv1.ReplicaSet{},
		deps:     map[types.NamespacedName]*appsv1.Deployment{},
		snaps:    map[types.NamespacedName][]planner.Snapshot{},
		whys:     map[types.NamespacedName][]why{},
		inflight: map[objectKey]*call{},
		unserved: map[string]int{},
		dropped:  map[uint64]bool{},
		failing:  map[string]*failing{},
	}
}

// at is the time since the cluster started, as a trace shows it.
func (r *recorder) at() string { return "+" + time.Since(r.start).String() }

func (r *recorder) add(text string) { r.entries = append(r.entries, entry{text: text}) }

// write records a stored write; memcluster calls it with its lock held.
func (r *recorder) write(w memcluster.Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changed = time.Now()
	key := types.NamespacedName{Namespace: w.Object.GetNamespace(), Name: w.Object.GetName()}
	line := fmt.Sprintf("%s %s %s %s rv=%d", r.at(), strings.ToLower(string(w.Type)), w.Resource, key, w.ResourceVersion)
	if w.Type == watch.Added {
		line += eventText(w.Object)
	}
	r.add(line)

	objs := r.objs[w.Resource]
	if objs == nil {
		objs = map[types.NamespacedName]memcluster.Object{}
		r.objs[w.Resource] = objs
	}
	var old runtime.Object
	if o, ok := objs[key]; ok {
		old = o
	}
	var cur runtime.Object = w.Object
	if w.Type == watch.Deleted {
		delete(objs, key)
		cur = nil
	} else {
		objs[key] = w.Object
	}

	switch obj := w.Object.(type) {
	case *appsv1.Deployment:
		if w.Type == watch.Deleted {
			delete(r.deps, key)
			return
		}
		r.deps[key] = obj
		r.snapLocked(key, why{by: r.causeLocked(w), old: old, new: cur})
	case *appsv1.ReplicaSet:
		if w.Type == watch.Deleted {
			delete(r.rss, key)
		} else {
			r.rss[key] = obj
		}
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == "Deployment" {
			r.snapLocked(types.NamespacedName{Namespace: key.Namespace, Name: ref.Name}, why{by: r.causeLocked(w), old: old, new: cur})
		}
	}
}

// causeLocked says who made write w: the step let through last when the
// cluster's steps go one at a time, else the REST request in flight for
// that object, if any.
func (r *recorder) causeLocked(w memcluster.Write) string {
	if s := r.sched.cause(); s != nil {
		switch s.step.Kind {
		case gate.StepKubelet:
			return "the kubelet"
		case gate.StepRequest:
			by := requestText(string(s.step.Verb), s.step.Resource, s.step.Namespace, s.step.Name, s.client, s.call)
			if s.step.Resource != w.Resource || s.step.Namespace != w.Object.GetNamespace() ||
				(s.step.Name != "" && s.step.Name != w.Object.GetName()) {
				return "the garbage collector, after " + by
			}
			return by
		}
		return ""
	}
	for _, k := range []objectKey{{w.Resource, w.Object.GetNamespace(), w.Object.GetName()}, {w.Resource, w.Object.GetNamespace(), ""}} {
		if cl := r.inflight[k]; cl != nil {
			return requestText("", k.resource, k.namespace, k.name, cl.client, cl)
		}
	}
	return ""
}

// requestText names a request and its client: `PUT deployments
// default/web from manager "webapp-controller"` (a REST request: its
// method, and the name kube-apiserver would give its field manager), or
// `update replicasets default/web-1 from replicaset-controller` (a
// built-in controller's direct call).
func requestText(verb string, resource, namespace, name, client string, cl *call) string {
	if cl == nil {
		return fmt.Sprintf("%s %s %s from %s", verb, resource, objectText(namespace, name), cmp.Or(client, "a direct client"))
	}
	if cl.subresource != "" {
		resource += "/" + cl.subresource
	}
	return fmt.Sprintf("%s %s %s from %s %q", cl.method, resource, objectText(namespace, name), cmp.Or(cl.client, "client"), cl.manager())
}

// objectText is ns/name, "in ns" for a list or create in a namespace, or
// "(all namespaces)".
func objectText(namespace, name string) string {
	switch {
	case name != "" && namespace != "":
		return namespace + "/" + name
	case name != "":
		return name
	case namespace != "":
		return "in " + namespace
	}
	return "(all namespaces)"
}

// request records a request the cluster admitted, or a watch it dropped;
// memcluster calls it once the request has passed the gate.
func (r *recorder) request(ctx context.Context, q memcluster.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q.Dropped {
		if r.dropped[q.Watch] {
			return // memcluster offers the rest of a backlog to a watch it has ended
		}
		r.dropped[q.Watch] = true
		who := ""
		if c := r.sched.watchClient(q.Watch); c != "" {
			who = " by " + c
		}
		r.add(fmt.Sprintf("%s watch %d of %s%s dropped (injected)", r.at(), q.Watch, q.Resource, who))
		return
	}
	cl := callOf(ctx)
	if cl == nil {
		text := requestText(q.Verb, q.Resource, q.Namespace, q.Name, clientOf(ctx), nil)
		r.add(fmt.Sprintf("%s request %s%s", r.at(), text, faultText(q)))
		// A direct call's answer is not seen: only an injected error counts.
		failed := q.Fault != nil && !q.Fault.AfterWrite
		if !failed && len(r.failing) == 0 {
			return
		}
		kind := requestText(q.Verb, q.Resource, q.Namespace, "", clientOf(ctx), nil)
		if failed {
			r.failedLocked(kind, fmt.Sprintf("%s%s (injected) at %s", namePrefix(q), faultName(q.Fault.Reason), r.at()))
		} else {
			delete(r.failing, kind)
		}
		return
	}
	cl.lines = append(cl.lines, len(r.entries))
	r.entries = append(r.entries, entry{at: r.at(), req: q, cl: cl})
	if cl.code == 0 && isWrite(q.Verb) {
		r.inflight[objectKey{q.Resource, q.Namespace, q.Name}] = cl
	}
}

func isWrite(v string) bool {
	return v != string(gate.VerbGet) && v != string(gate.VerbList) && v != string(gate.VerbWatch)
}

// answered records the status code a REST request was answered.
func (r *recorder) answered(cl *call, code int, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cl.code = code
	for _, i := range cl.lines {
		q := r.entries[i].req
		if k := (objectKey{q.Resource, q.Namespace, q.Name}); r.inflight[k] == cl {
			delete(r.inflight, k)
		}
		failed := code >= 400 && code != 404
		if !failed && len(r.failing) == 0 {
			continue // the common case, without formatting
		}
		kind := requestText(q.Verb, q.Resource, q.Namespace, "", cl.client, cl)
		if failed {
			r.failedLocked(kind, fmt.Sprintf("%s%d%s at %s", namePrefix(q), code, faultText(q), r.at()))
		} else {
			delete(r.failing, kind)
		}
	}
	if len(cl.lines) == 0 && code == 404 {
		r.unserved[cl.method+" "+path]++
	}
}

// namePrefix is "ns/name: " for a request of one object, else "".
func namePrefix(q memcluster.Request) string {
	if q.Name == "" {
		return ""
	}
	return objectText(q.Namespace, q.Name) + ": "
}

// failedLocked counts a failed request of kind (a verb, resource and
// client), last telling it.
func (r *recorder) failedLocked(kind, last string) {
	f := r.failing[kind]
	if f == nil {
		f = &failing{}
		r.failing[kind] = f
	}
	f.n++
	f.last = last
}

// line is the text of e.
func (e entry) line() string {
	if e.cl == nil {
		return e.text
	}
	answer := "no answer yet"
	if e.cl.code != 0 {
		answer = fmt.Sprint(e.cl.code)
	}
	q := e.req
	return fmt.Sprintf("%s request %s: %s%s", e.at, requestText(q.Verb, q.Resource, q.Namespace, q.Name, e.cl.client, e.cl), answer, faultText(q))
}

// faultText says what was injected into a request: " (injected latency
// 100ms, Conflict)", or "".
func faultText(q memcluster.Request) string {
	var parts []string
	if q.Latency > 0 {
		parts = append(parts, "latency "+q.Latency.String())
	}
	if f := q.Fault; f != nil {
		p := faultName(f.Reason)
		if f.AfterWrite {
			p += " after the write"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (injected " + strings.Join(parts, ", ") + ")"
}

// faultName is the code and reason of the error a fault of reason
// injects ("409 Conflict").
func faultName(reason metav1.StatusReason) string {
	switch reason {
	case metav1.StatusReasonServiceUnavailable:
		return "503 ServiceUnavailable"
	case metav1.StatusReasonConflict:
		return "409 Conflict"
	case metav1.StatusReasonTooManyRequests:
		return "429 TooManyRequests"
	case "":
		return "500 InternalError"
	}
	return "500 " + string(reason)
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

// snapLocked records the state of Deployment key and its ReplicaSets,
// and the write that made it.
func (r *recorder) snapLocked(key types.NamespacedName, w why) {
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
	r.whys[key] = append(r.whys[key], w)
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
	r.add(fmt.Sprintf("%s event %s %s %s %s: %s", r.at(), component, eventType, reason, name, message))
}

// Trace returns what happened so far, in order, with the virtual time
// since the cluster started:
//
//   - every write the API server stored: "+1.5s added pods
//     default/web-7d9f-x2k4q rv=42" (an Event's reason and message follow
//     its key);
//   - every request it admitted, with its client and answer: "+1.5s
//     request PUT deployments default/web from manager \"webapp\": 409
//     (injected 409 Conflict)". A REST request names the client the bench
//     gave its rest.Config ("manager", "client", "config"; see
//     [Cluster.Config]) and, in quotes, the field manager kube-apiserver
//     would record for it (its fieldManager, or its user agent up to the
//     first "/"). A built-in controller's request names the controller,
//     without an answer (it is not a REST request), as in "+2s request
//     create pods default/web-1 from replicaset-controller";
//   - every watch the server dropped to inject a fault;
//   - every event of the built-in controllers: "+1.5s event
//     replicaset-controller Normal SuccessfulCreate default/web-7d9f:
//     Created pod: ...".
//
// Discovery, and requests refused before they reach a kind (a path the
// bench does not serve), are not in the trace; RunUntil's answers name
// the paths that were not served.
//
// With the default Options, the same test gives the same trace run after
// run.
func (c *Cluster) Trace() []string {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	out := make([]string, len(c.rec.entries))
	for i, e := range c.rec.entries {
		out[i] = e.line()
	}
	return out
}

// Check runs planner.Check on every state the Deployments of the cluster
// went through (every write of a Deployment or of one of its ReplicaSets):
// surge and availability bounds, revisions, completion. It returns an error
// listing the violations, or nil. Each violation names the write that
// caused it: the request and its client, and what the write changed, as
// in
//
//	deployment default/web: RevisionDecreased at +3s: deployment revision went from 1 to 0,
//	by PUT deployments default/web from manager "webapp" (annotation deployment.kubernetes.io/revision removed)
func (c *Cluster) Check() error {
	c.rec.mu.Lock()
	snaps, whys := maps.Clone(c.rec.snaps), maps.Clone(c.rec.whys)
	c.rec.mu.Unlock()
	var errs []error
	for _, key := range slices.SortedFunc(maps.Keys(snaps), compareKeys) {
		s := snaps[key]
		trace, err := planner.TraceFrom(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("deployment %s: %w", key, err))
			continue
		}
		for _, v := range planner.Check(trace, s[len(s)-1].Deployment) {
			msg := fmt.Sprintf("deployment %s: %s at +%v: %s", key, v.Code, v.Time.Sub(c.rec.start), v.Message)
			if v.Step < len(whys[key]) {
				msg += whys[key][v.Step].String()
			}
			errs = append(errs, errors.New(msg))
		}
	}
	return errors.Join(errs...)
}

// String is ", by <who> (<what changed>)", or "" when neither is known.
func (w why) String() string {
	var s string
	if w.by != "" {
		s = ", by " + w.by
	}
	if ch := describeChange(w.old, w.new); ch != "" {
		if s == "" {
			s = ","
		}
		s += " (" + describeObject(w.new, w.old) + ch + ")"
	}
	return s
}

// describeObject names the written object when it is a ReplicaSet (the
// violation is the Deployment's).
func describeObject(objs ...runtime.Object) string {
	for _, o := range objs {
		if rs, ok := o.(*appsv1.ReplicaSet); ok {
			return "replicaset " + rs.Name + ": "
		}
	}
	return ""
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
