package plugin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// The finalizers of the garbage collector (metav1.FinalizerOrphanDependents
// and metav1.FinalizerDeleteDependents).
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// writer is one entry of metadata.managedFields: who wrote the object,
// how, when, and whether it owns fields of the spec.
type writer struct {
	manager     string
	operation   metav1.ManagedFieldsOperationType
	subresource string
	at          time.Time // zero: no time recorded
	spec        bool      // owns something under spec
	replicas    bool      // owns spec.replicas
	template    bool      // owns something under spec.template
}

// writers reads obj's managedFields, newest first.
func writers(obj metav1.Object) []writer {
	var out []writer
	for _, e := range obj.GetManagedFields() {
		w := writer{manager: e.Manager, operation: e.Operation, subresource: e.Subresource}
		if e.Time != nil {
			w.at = e.Time.Time
		}
		if e.FieldsV1 != nil {
			var f map[string]json.RawMessage
			if json.Unmarshal(e.FieldsV1.Raw, &f) == nil {
				if raw, ok := f["f:spec"]; ok {
					w.spec = true
					var spec map[string]json.RawMessage
					if json.Unmarshal(raw, &spec) == nil {
						_, w.replicas = spec["f:replicas"]
						_, w.template = spec["f:template"]
					}
				}
			}
		}
		out = append(out, w)
	}
	slices.SortStableFunc(out, func(a, b writer) int { return b.at.Compare(a.at) })
	return out
}

// specChangedAt is when d's spec last changed, as its managedFields
// record it: the newest time of a writer (not of the status) that owns
// spec fields, else of any writer but the status's. Zero when unknown.
// managedFields keep one time per writer, with one-second resolution, and
// a writer's time moves with any change it makes (a label too), so this
// is at or after the spec change: a wait measured from it is never too
// long.
func specChangedAt(d *appsv1.Deployment) time.Time {
	var any time.Time
	for _, w := range writers(d) {
		if w.subresource == "status" {
			continue
		}
		if w.spec {
			return w.at
		}
		if any.IsZero() {
			any = w.at
		}
	}
	return any
}

// statusWriter is the newest writer of d's status subresource: the
// controller that last acted on it (nil if none recorded).
func statusWriter(d *appsv1.Deployment) *writer {
	for _, w := range writers(d) {
		if w.subresource == "status" {
			return &w
		}
	}
	return nil
}

// notObserved returns how long d's latest generation has waited for a
// controller, when it has waited at least th (ok false otherwise, or
// when the controller is up to date). known is false when d records no
// time to measure from; the wait is then d's age. A controller that
// cannot create the new ReplicaSet of the current template writes
// Progressing=False/ReplicaSetCreateError naming it, but leaves
// observedGeneration behind (as upstream's does): it is acting, and the
// refusal is the cause, so that is not a wait.
func notObserved(d *appsv1.Deployment, now time.Time, th time.Duration) (waited time.Duration, known, ok bool) {
	if d.Status.ObservedGeneration >= d.Generation {
		return 0, false, false
	}
	if c := rollout.GetCondition(d.Status, appsv1.DeploymentProgressing); c != nil && c.Reason == rollout.ReasonFailedRSCreate {
		for _, name := range collisionNames(d) {
			if strings.Contains(c.Message, strconv.Quote(name)) {
				return 0, true, false
			}
		}
	}
	since := specChangedAt(d)
	known = !since.IsZero()
	if !known {
		since = d.CreationTimestamp.Time
	}
	waited = now.Sub(since)
	return waited, known, waited >= th && !since.IsZero()
}

// controllerLag reports a controller that has not acted on d's latest
// generation for longer than th: it is not running, not keeping up, or
// not watching this Deployment. The leader Leases read (st.Leases) say
// which.
func controllerLag(d *appsv1.Deployment, st *State, now time.Time, th time.Duration) []Cause {
	waited, known, ok := notObserved(d, now, th)
	if !ok || d.DeletionTimestamp != nil {
		return nil
	}
	when := fmt.Sprintf("for %s", age(now, now.Add(-waited)))
	if !known {
		when = fmt.Sprintf("for up to %s (the deployment's age: it records no time of its last change)", age(now, now.Add(-waited)))
	}
	msg := fmt.Sprintf("no Deployment controller has acted on generation %d %s (status.observedGeneration is %d): the controller is not running, not keeping up, or not watching this namespace",
		d.Generation, when, d.Status.ObservedGeneration)
	var detail []string
	if w := statusWriter(d); w != nil {
		detail = append(detail, fmt.Sprintf("the status was last written by %q %s ago", w.manager, age(now, w.at)))
	} else {
		detail = append(detail, "no controller has ever written the status")
	}
	var names []string
	for _, l := range st.Leases {
		detail = append(detail, leaseText(l, now))
		names = append(names, l.Namespace+"/"+l.Name)
	}
	check := "kubectl -n kube-system get leases"
	if len(names) > 0 {
		check = leaseCommand(st.Leases)
	}
	fix := fmt.Sprintf("check the controller that runs Deployments: %s (a renewTime older than leaseDurationSeconds means no leader), its pods and logs "+
		"(kubectl -n kube-system logs -l component=kube-controller-manager), and that it runs the deployment controller for this namespace "+
		"(kube-controller-manager --controllers; ctrlkit-controller --namespace); once one runs, it acts on generation %d at once", check, d.Generation)
	return []Cause{{Code: ControllerNotObserving, Severity: Blocking, Message: msg, Objects: []string{"deployment/" + d.Name},
		Detail: strings.Join(detail, "\n"), Fix: fix}}
}

// leaseCommand is the kubectl command that shows the Leases read.
func leaseCommand(ls []LeaseRead) string {
	byNS := map[string][]string{}
	var order []string
	for _, l := range ls {
		if _, ok := byNS[l.Namespace]; !ok {
			order = append(order, l.Namespace)
		}
		byNS[l.Namespace] = append(byNS[l.Namespace], l.Name)
	}
	var cmds []string
	for _, ns := range order {
		cmds = append(cmds, fmt.Sprintf("kubectl -n %s get lease %s -o wide", ns, strings.Join(byNS[ns], " ")))
	}
	return strings.Join(cmds, "; ")
}

// leaseText says what a leader Lease tells about its controller.
func leaseText(l LeaseRead, now time.Time) string {
	name := fmt.Sprintf("lease %s/%s", l.Namespace, l.Name)
	if l.Lease == nil {
		return fmt.Sprintf("%s: %s", name, l.Err)
	}
	sp := l.Lease.Spec
	holder := ""
	if sp.HolderIdentity != nil {
		holder = *sp.HolderIdentity
	}
	dur := time.Duration(deref(sp.LeaseDurationSeconds)) * time.Second
	if holder == "" {
		s := name + ": no holder (released): no instance is leading"
		if sp.RenewTime != nil {
			s += fmt.Sprintf(", last renewed %s ago", age(now, sp.RenewTime.Time))
		}
		return s
	}
	s := fmt.Sprintf("%s: held by %s", name, holder)
	if sp.AcquireTime != nil {
		s += fmt.Sprintf(" since %s ago", age(now, sp.AcquireTime.Time))
	}
	if sp.RenewTime == nil {
		return s + ", never renewed"
	}
	since := now.Sub(sp.RenewTime.Time)
	if dur > 0 && since > dur {
		return s + fmt.Sprintf(", last renewed %s ago: its %s lease expired %s ago, so that instance is gone and no other took over",
			age(now, sp.RenewTime.Time), dur, age(now, sp.RenewTime.Add(dur)))
	}
	return s + fmt.Sprintf(", renewed %s ago (%s lease): that leader is alive, yet does not act on this Deployment (another namespace filter, the deployment controller not enabled, or a backlog)",
		age(now, sp.RenewTime.Time), dur)
}

// deletion reports a Deployment being deleted: the controller only
// updates its status (upstream's status-only sync), so it neither rolls
// out nor scales; the finalizers say what holds it and what happens to
// its ReplicaSets and pods.
func deletion(d *appsv1.Deployment, st *State, owned []*appsv1.ReplicaSet, now time.Time) []Cause {
	if d.DeletionTimestamp == nil {
		return nil
	}
	var rss, pods int
	uids := map[string]bool{}
	for _, rs := range owned {
		if rs.DeletionTimestamp == nil {
			rss++
		}
		uids[string(rs.UID)] = true
	}
	for _, p := range st.Pods {
		if ref := controllerOf(p); ref != nil && uids[string(ref.UID)] && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			pods++
		}
	}
	deps := fmt.Sprintf("%d %s and their %d %s", rss, plural(rss, "ReplicaSet", "ReplicaSets"), pods, plural(pods, "pod", "pods"))
	var others []string
	for _, f := range d.Finalizers {
		if f != finalizerOrphan && f != finalizerForeground {
			others = append(others, f)
		}
	}
	since := age(now, d.DeletionTimestamp.Time)
	msg := fmt.Sprintf("the deployment is being deleted (for %s): the controller no longer rolls it out or scales it, it only updates its status", since)
	var fate string
	switch {
	case slices.Contains(d.Finalizers, finalizerOrphan):
		fate = fmt.Sprintf("orphan deletion: the garbage collector removes the deployment's ownership of its %s, which keep running, owned by nothing", deps)
	case slices.Contains(d.Finalizers, finalizerForeground):
		fate = fmt.Sprintf("foreground deletion: the garbage collector deletes its %s first, then the deployment", deps)
	default:
		fate = fmt.Sprintf("background deletion: once the deployment is gone the garbage collector deletes its %s; until then they keep running as they are", deps)
	}
	var detail []string
	if len(d.Finalizers) > 0 {
		detail = append(detail, "held by finalizers "+strings.Join(d.Finalizers, ", "))
	}
	detail = append(detail, fate)
	var fix string
	switch {
	case len(others) > 0:
		fix = fmt.Sprintf("finalizer %s is removed by the controller that added it once its cleanup is done; if that controller is gone, remove it yourself "+
			"(kubectl patch deployment/%s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers/%d\"}]'), which completes the deletion",
			strings.Join(others, ", "), d.Name, slices.Index(d.Finalizers, others[0]))
	case len(d.Finalizers) > 0:
		fix = "the garbage collector (kube-controller-manager) removes this finalizer when the dependents are handled: if it does not, check that it runs, and the dependents' own finalizers"
	default:
		fix = "nothing holds it: the API server removes it at once; if it stays, the garbage collector is not running"
	}
	fix += "; a deletion cannot be cancelled: to keep the app, create the Deployment again under the same name once it is gone"
	return []Cause{{Code: BeingDeleted, Severity: Blocking, Message: msg, Objects: []string{"deployment/" + d.Name},
		Detail: strings.Join(detail, "\n"), Fix: fix}}
}
