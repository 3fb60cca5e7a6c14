package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// State is what the plugin reads about one Deployment. Fetch fills it from
// a cluster; tests build it by hand.
type State struct {
	// Deployment is the live object.
	Deployment *appsv1.Deployment
	// ReplicaSets are the namespace's ReplicaSets whose labels match the
	// Deployment's selector (owned or not), plus any that hold a name the
	// controller computed for the current template (hash collisions).
	ReplicaSets []*appsv1.ReplicaSet
	// Pods are the namespace's pods matching the selector.
	Pods []*corev1.Pod
	// Deployments are the namespace's other Deployments (selector overlap).
	Deployments []*appsv1.Deployment
	// PDBs are the namespace's PodDisruptionBudgets.
	PDBs []*policyv1.PodDisruptionBudget
	// Events are the namespace's recent Warning events, and every event
	// of the Deployment and of the autoscalers that target it (scaling
	// events are Normal ones).
	Events []*corev1.Event
	// Autoscalers are the namespace's HorizontalPodAutoscalers whose
	// scaleTargetRef is the Deployment.
	Autoscalers []*autoscalingv2.HorizontalPodAutoscaler
	// ResourceQuotas and LimitRanges are the namespace's: pods are
	// created through them (their defaults and limits), so a rollout's
	// progress depends on them.
	ResourceQuotas []*corev1.ResourceQuota
	LimitRanges    []*corev1.LimitRange
	// QuotaPods are every pod of the namespace, read only when a
	// ResourceQuota limits a resource pods consume: the pods outside the
	// selector count against it too.
	QuotaPods []*corev1.Pod
	// ReplicasWrites are the changes of spec.replicas Fetch saw while it
	// watched the Deployment during a fight over it (FetchOptions.Observe),
	// oldest first.
	ReplicasWrites []ReplicasWrite
	// Leases are the leader-election Leases of the controllers that may
	// run the Deployment controller (FetchOptions.Leases). Fetch reads
	// them only when the controller has not observed the Deployment's
	// generation: they tell whether a controller is alive.
	Leases []LeaseRead
	// Warnings say what could not be read (a missing permission for the
	// optional reads: PDBs, events, other Deployments, autoscalers).
	Warnings []string
}

// LeaseRead is one leader-election Lease as Fetch found it.
type LeaseRead struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Lease is the object; nil when it could not be read.
	Lease *coordinationv1.Lease
	// Err says why it could not be read ("not found", "no permission …").
	Err string
}

// DefaultLeases are the Leases FetchOptions.Leases defaults to:
// kube-controller-manager's (its --leader-elect-resource-name default) and
// ctrlkit-controller's, both in kube-system.
var DefaultLeases = []string{"kube-system/kube-controller-manager", "kube-system/ctrlkit-controller"}

// FetchOptions configures [FetchWith].
type FetchOptions struct {
	// Leases are the leader-election Leases (namespace/name) to read when
	// the controller lags behind the Deployment's generation; nil means
	// DefaultLeases.
	Leases []string
	// Observe, if positive, lets Fetch watch the Deployment for up to
	// that long while its scaling events show a fight over spec.replicas
	// going on (ObserveFor: three flip periods at most), to see who sets
	// it (State.ReplicasWrites): managedFields keep only the last writer
	// of a field. Zero watches nothing.
	Observe time.Duration
	// Now is the clock that decides whether a fight is going on (nil:
	// time.Now).
	Now func() time.Time
}

// Getter is the part of kubernetes.Interface that Fetch uses.
type Getter = kubernetes.Interface

// Fetch is FetchWith with the default options.
func Fetch(ctx context.Context, cs Getter, ns, name string) (*State, error) {
	return FetchWith(ctx, cs, ns, name, FetchOptions{})
}

// FetchWith reads the Deployment name in namespace ns and everything State
// holds. A missing Deployment, a missing permission for the required reads
// (the Deployment, ReplicaSets, pods) and an unreachable server are errors
// that say so; the optional reads only add to State.Warnings (or, for the
// Leases, to LeaseRead.Err).
func FetchWith(ctx context.Context, cs Getter, ns, name string, o FetchOptions) (*State, error) {
	leases := o.Leases
	if leases == nil {
		leases = DefaultLeases
	}
	for _, l := range leases {
		if lns, lname, ok := strings.Cut(l, "/"); !ok || lns == "" || lname == "" {
			return nil, &UserError{Msg: fmt.Sprintf("lease %q: want namespace/name", l)}
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, describeErr(err, "get", "deployments.apps", ns, name)
	}
	st := &State{Deployment: d}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", ns, name, err)
	}
	if sel.Empty() {
		sel = labels.Nothing() // an empty selector makes the controller ignore it
	}
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	fetchQuotas(ctx, cs, st)
	// Pods before ReplicaSets: a pod's ReplicaSet exists before it, so
	// every pod read has its ReplicaSet read too. When a quota limits
	// pods, every pod of the namespace counts against it: one list gives
	// both, consistent with each other.
	quotaPods := len(quotasOnPods(st)) > 0
	podOpts := opts
	if quotaPods {
		podOpts = metav1.ListOptions{}
	}
	pl, err := cs.CoreV1().Pods(ns).List(ctx, podOpts)
	if err != nil {
		return nil, describeErr(err, "list", "pods", ns, "")
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		if quotaPods {
			st.QuotaPods = append(st.QuotaPods, p)
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
		}
		st.Pods = append(st.Pods, p)
	}
	rsl, err := cs.AppsV1().ReplicaSets(ns).List(ctx, opts)
	if err != nil {
		return nil, describeErr(err, "list", "replicasets.apps", ns, "")
	}
	for i := range rsl.Items {
		st.ReplicaSets = append(st.ReplicaSets, &rsl.Items[i])
	}
	for _, n := range collisionNames(d) {
		if hasRS(st.ReplicaSets, n) {
			continue
		}
		rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, n, metav1.GetOptions{})
		if err == nil {
			st.ReplicaSets = append(st.ReplicaSets, rs)
		} else if !apierrors.IsNotFound(err) {
			st.Warnings = append(st.Warnings, describeErr(err, "get", "replicasets.apps", ns, n).Error())
		}
	}
	if dl, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err != nil {
		st.Warnings = append(st.Warnings, describeErr(err, "list", "deployments.apps", ns, "").Error()+" (selector overlaps not checked)")
	} else {
		for i := range dl.Items {
			if dl.Items[i].UID != d.UID {
				st.Deployments = append(st.Deployments, &dl.Items[i])
			}
		}
	}
	if pdbs, err := cs.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{}); err != nil {
		st.Warnings = append(st.Warnings, describeErr(err, "list", "poddisruptionbudgets.policy", ns, "").Error()+" (PodDisruptionBudgets not checked)")
	} else {
		for i := range pdbs.Items {
			st.PDBs = append(st.PDBs, &pdbs.Items[i])
		}
	}
	if hl, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{}); err != nil {
		st.Warnings = append(st.Warnings, describeErr(err, "list", "horizontalpodautoscalers.autoscaling", ns, "").Error()+" (autoscalers not checked)")
	} else {
		for i := range hl.Items {
			if targets(&hl.Items[i], d) {
				st.Autoscalers = append(st.Autoscalers, &hl.Items[i])
			}
		}
	}
	seen := map[string]bool{}
	addEvents := func(opts metav1.ListOptions, what string) {
		ev, err := cs.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			st.Warnings = append(st.Warnings, describeErr(err, "list", "events", ns, "").Error()+" ("+what+" not read)")
			return
		}
		for i := range ev.Items {
			if e := &ev.Items[i]; e.Name == "" || !seen[e.Name] {
				seen[e.Name] = true
				st.Events = append(st.Events, e)
			}
		}
	}
	addEvents(metav1.ListOptions{FieldSelector: "type=Warning", Limit: 1000}, "probe failures and kubelet rejections")
	addEvents(metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(d.UID), Limit: 1000}, "scaling events")
	for _, h := range st.Autoscalers {
		addEvents(metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(h.UID), Limit: 200}, "autoscaler events")
	}
	if o.Observe > 0 {
		clock := o.Now
		if clock == nil {
			clock = time.Now
		}
		if dur := ObserveFor(d, st.ReplicaSets, st.Events, clock(), o.Observe); dur > 0 {
			ws, err := watchReplicas(ctx, cs, d, dur, clock)
			st.ReplicasWrites = ws
			if err != nil {
				st.Warnings = append(st.Warnings, describeErr(err, "watch", "deployments.apps", ns, name).Error()+" (the writers of spec.replicas not watched)")
			}
		}
	}
	if d.Status.ObservedGeneration < d.Generation {
		for _, l := range leases {
			lns, lname, _ := strings.Cut(l, "/")
			r := LeaseRead{Namespace: lns, Name: lname}
			if lease, err := cs.CoordinationV1().Leases(lns).Get(ctx, lname, metav1.GetOptions{}); err != nil {
				r.Err = describeErr(err, "get", "leases.coordination.k8s.io", lns, lname).Error()
			} else {
				r.Lease = lease
			}
			st.Leases = append(st.Leases, r)
		}
	}
	return st, nil
}

// targets reports whether h scales d.
func targets(h *autoscalingv2.HorizontalPodAutoscaler, d *appsv1.Deployment) bool {
	ref := h.Spec.ScaleTargetRef
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return ref.Kind == "Deployment" && ref.Name == d.Name && (group == "apps" || group == "extensions")
}

// collisionNames are the ReplicaSet names the controller computes for d's
// template with every collision count up to the current one: a
// ReplicaSet squatting on one of them is a hash collision.
func collisionNames(d *appsv1.Deployment) []string {
	var out []string
	n := int32(0)
	if d.Status.CollisionCount != nil {
		n = *d.Status.CollisionCount
	}
	for c := int32(0); c <= n && c < 10; c++ {
		var cc *int32 // the controller hashes a nil count until the first collision
		if c > 0 {
			cc = &c
		}
		out = append(out, rollout.ReplicaSetName(d.Name, rollout.ComputeHash(&d.Spec.Template, cc)))
	}
	return out
}

func hasRS(rss []*appsv1.ReplicaSet, name string) bool {
	for _, rs := range rss {
		if rs.Name == name {
			return true
		}
	}
	return false
}

// describeErr turns a client error into one a user can act on: a missing
// object, a missing permission, an unreachable server.
func describeErr(err error, verb, resource, ns, name string) error {
	what := resource
	if name != "" {
		what = fmt.Sprintf("%s %q", resource, name)
	}
	switch {
	case apierrors.IsNotFound(err):
		return &UserError{Msg: fmt.Sprintf("%s not found in namespace %q", what, ns), Err: err}
	case apierrors.IsForbidden(err):
		return &UserError{Msg: fmt.Sprintf("no permission to %s %s in namespace %q: %s", verb, what, ns, statusMessage(err)), Err: err}
	case apierrors.IsUnauthorized(err):
		return &UserError{Msg: "not authenticated to the API server (check your kubeconfig credentials): " + statusMessage(err), Err: err}
	}
	if host, ok := unreachable(err); ok {
		return &UserError{Msg: fmt.Sprintf("cannot reach the API server %s: %v", host, rootCause(err)), Err: err}
	}
	return fmt.Errorf("%s %s: %w", verb, what, err)
}

// UserError is an error whose message is meant for the user as it is.
type UserError struct {
	Msg string
	Err error
}

func (e *UserError) Error() string { return e.Msg }
func (e *UserError) Unwrap() error { return e.Err }

func statusMessage(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status().Message
	}
	return err.Error()
}

// unreachable reports whether err is a failure to connect (refused, no
// route, DNS, timeout, TLS handshake) and the host it was for.
func unreachable(err error) (string, bool) {
	var ue *url.Error
	host := ""
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.As(err, &oe), errors.As(err, &de):
		return host, true
	case errors.As(err, &ne) && ne.Timeout():
		return host, true
	case ue != nil && (strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "tls:") ||
		strings.Contains(err.Error(), "x509:")):
		return host, true
	}
	return host, false
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// age renders how long ago t was, rounded for people.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
