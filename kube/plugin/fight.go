package plugin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fightWindow is how recent the evidence of a fight must be: the event
// recorder's aggregation window (client-go folds repeats of an event into
// its count for ten minutes).
const fightWindow = 10 * time.Minute

// lastAppliedAnnotation is where `kubectl apply` (client-side) keeps the
// manifest it applied last.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

var scaledRE = regexp.MustCompile(`^Scaled (up|down) replica set (\S+) from (\d+) to (\d+)`)

// scaling is one ScalingReplicaSet event of the deployment controller,
// with its repeats folded in.
type scaling struct {
	rs          string
	up          bool
	from, to    int64
	count       int32
	first, last time.Time
}

// eventSpan returns how often an event happened and its first and last
// time, from the core/v1 fields or the events.k8s.io series.
func eventSpan(e *corev1.Event) (count int32, first, last time.Time) {
	count = max(e.Count, 1)
	first, last = e.FirstTimestamp.Time, e.LastTimestamp.Time
	if !e.EventTime.IsZero() {
		if first.IsZero() {
			first = e.EventTime.Time
		}
		if e.EventTime.After(last) {
			last = e.EventTime.Time
		}
	}
	if s := e.Series; s != nil {
		count = max(count, s.Count)
		if s.LastObservedTime.After(last) {
			last = s.LastObservedTime.Time
		}
	}
	if first.IsZero() {
		first = last
	}
	return count, first, last
}

// scalings parses the deployment controller's ScalingReplicaSet events
// about d.
func scalings(d *appsv1.Deployment, events []*corev1.Event) []scaling {
	var out []scaling
	for _, e := range events {
		io := e.InvolvedObject
		if io.Kind != "Deployment" || io.Name != d.Name || (io.UID != "" && d.UID != "" && io.UID != d.UID) || e.Reason != "ScalingReplicaSet" {
			continue
		}
		m := scaledRE.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		from, _ := strconv.ParseInt(m[3], 10, 32)
		to, _ := strconv.ParseInt(m[4], 10, 32)
		s := scaling{rs: m[2], up: m[1] == "up", from: from, to: to}
		s.count, s.first, s.last = eventSpan(e)
		out = append(out, s)
	}
	return out
}

// flap is a ReplicaSet scaled up and down again and again: an up and a
// down event whose times interleave, one of them repeated.
type flap struct {
	up, down scaling
}

// flaps finds, for each ReplicaSet, the strongest up/down pair that shows
// it being scaled back and forth within the fight window: at least four
// scalings in all, one message repeated (the same scale happened again),
// and the two spans overlapping (so the directions alternated; a single
// rollback scales up, then down, without overlap).
func flaps(ss []scaling, now time.Time) []flap {
	var out []flap
	byRS := map[string][]scaling{}
	var order []string
	for _, s := range ss {
		if _, ok := byRS[s.rs]; !ok {
			order = append(order, s.rs)
		}
		byRS[s.rs] = append(byRS[s.rs], s)
	}
	for _, rs := range order {
		var best *flap
		for _, u := range byRS[rs] {
			for _, dn := range byRS[rs] {
				if !u.up || dn.up || u.count+dn.count < 4 || max(u.count, dn.count) < 2 {
					continue
				}
				// One-second timestamps: spans that touch overlap.
				if u.first.After(dn.last.Add(time.Second)) || dn.first.After(u.last.Add(time.Second)) {
					continue
				}
				if now.Sub(later(u.last, dn.last)) > fightWindow {
					continue
				}
				if best == nil || u.count+dn.count > best.up.count+best.down.count {
					best = &flap{up: u, down: dn}
				}
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// party is one writer of the spec that Why can name.
type party struct {
	name string
	hpa  bool
}

// specFight reports a spec that keeps changing because two writers
// disagree: the deployment controller's scaling events show a ReplicaSet
// scaled back and forth, and the writers are named from what the object
// records (managedFields, kubectl's last-applied-configuration, GitOps
// markers, its controller) and the autoscalers that target it. Without
// flapping, an autoscaler next to a manifest that also sets
// spec.replicas is a warning: every apply resets the autoscaler's choice.
func specFight(d *appsv1.Deployment, st *State, now time.Time) []Cause {
	fl := flaps(scalings(d, st.Events), now)
	applied, appliedReplicas := lastApplied(d)
	parties := fightParties(d, st, now)
	names := make([]string, len(parties))
	hasHPA := false
	for i, p := range parties {
		names[i] = p.name
		hasHPA = hasHPA || p.hpa
	}
	if len(fl) == 0 {
		// A GitOps tool's markers do not say whether its manifest sets
		// replicas (it may ignore the field): only kubectl's record does.
		if len(st.Autoscalers) == 0 || appliedReplicas == nil {
			return nil
		}
		h := st.Autoscalers[0]
		return []Cause{{Code: SpecFight, Severity: Warning,
			Message: fmt.Sprintf("HorizontalPodAutoscaler %s manages spec.replicas, and the manifest applied by kubectl apply sets it too "+
				"(replicas: %d in kubectl's last-applied-configuration): every apply resets the autoscaler's choice", h.Name, *appliedReplicas),
			Objects: []string{"deployment/" + d.Name, "horizontalpodautoscaler/" + h.Name},
			Fix:     fightFix(d, true)}}
	}
	field := "spec.replicas"
	if len(fl) > 1 || fl[0].up.from == 0 || fl[0].down.to == 0 {
		field = "the pod template (spec.template)"
	}
	var seen []string
	first, last := fl[0].up.first, fl[0].up.last
	for _, f := range fl {
		seen = append(seen, fmt.Sprintf("%s scaled %d→%d ×%d and %d→%d ×%d", f.up.rs, f.up.from, f.up.to, f.up.count, f.down.from, f.down.to, f.down.count))
		for _, t := range []time.Time{f.up.first, f.down.first} {
			if t.Before(first) {
				first = t
			}
		}
		for _, t := range []time.Time{f.up.last, f.down.last} {
			if t.After(last) {
				last = t
			}
		}
	}
	msg := fmt.Sprintf("%s keeps changing: %s within %s, the last %s ago (generation %d, %s old): two writers disagree",
		field, strings.Join(seen, "; "), last.Sub(first).Round(time.Second), age(now, last), d.Generation, age(now, d.CreationTimestamp.Time))
	switch len(names) {
	case 0:
		msg += "; none is recorded on the object (a writer's managedFields entry goes when another takes all its fields): kubectl get deployment/" + d.Name + " --show-managed-fields -o yaml, and the audit log, name them"
	case 1:
		msg += ": " + names[0] + ", and another that left no trace (its managedFields entry goes when the other takes all its fields)"
	default:
		msg += ": " + strings.Join(names, "; ")
	}
	objs := []string{"deployment/" + d.Name}
	for _, h := range st.Autoscalers {
		objs = append(objs, "horizontalpodautoscaler/"+h.Name)
	}
	var detail []string
	if applied && appliedReplicas != nil && replicas(d.Spec.Replicas) != *appliedReplicas {
		detail = append(detail, fmt.Sprintf("kubectl's last-applied-configuration says replicas: %d; the live spec says %d", *appliedReplicas, replicas(d.Spec.Replicas)))
	}
	for _, w := range writers(d) {
		if w.subresource == "status" || w.at.IsZero() {
			continue
		}
		fields := "metadata"
		switch {
		case w.replicas && w.template:
			fields = "spec.replicas and spec.template"
		case w.replicas:
			fields = "spec.replicas"
		case w.template:
			fields = "spec.template"
		case w.spec:
			fields = "other spec fields"
		}
		via := ""
		if w.subresource != "" {
			via = " via /" + w.subresource
		}
		detail = append(detail, fmt.Sprintf("managedFields: %s (%s%s) owns %s, wrote %s ago", w.manager, w.operation, via, fields, age(now, w.at)))
	}
	return []Cause{{Code: SpecFight, Severity: Blocking, Message: msg, Objects: objs, Detail: strings.Join(detail, "\n"), Fix: fightFix(d, hasHPA)}}
}

func fightFix(d *appsv1.Deployment, hpa bool) string {
	if hpa {
		return "let the HorizontalPodAutoscaler alone own spec.replicas: remove replicas from the manifest your tool applies " +
			"(Argo CD: ignoreDifferences on /spec/replicas; Flux/kubectl apply: drop the field from the manifest), or delete the autoscaler"
	}
	return "make one writer own the field: stop or reconfigure the other one named above; kubectl get deployment/" + d.Name +
		" --show-managed-fields -o yaml shows who writes which field, and when"
}

// lastApplied reads kubectl's last-applied-configuration: whether there
// is one, and the spec.replicas it sets.
func lastApplied(d *appsv1.Deployment) (bool, *int32) {
	raw, ok := d.Annotations[lastAppliedAnnotation]
	if !ok {
		return false, nil
	}
	var m struct {
		Spec struct {
			Replicas *int32 `json:"replicas"`
		} `json:"spec"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return true, nil
	}
	return true, m.Spec.Replicas
}

// gitOps names the GitOps tool whose markers d carries ("" if none).
func gitOps(d *appsv1.Deployment) string {
	for k := range d.Annotations {
		if strings.HasPrefix(k, "argocd.argoproj.io/") {
			return "Argo CD"
		}
	}
	for k := range d.Labels {
		if strings.HasPrefix(k, "kustomize.toolkit.fluxcd.io/") || strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
			return "Flux"
		}
	}
	return ""
}

// managerKind says what a managedFields manager is, when its name tells.
func managerKind(manager, subresource string) string {
	m := strings.ToLower(manager)
	switch {
	case strings.HasPrefix(m, "argocd"):
		return "Argo CD, GitOps"
	case strings.HasPrefix(m, "kustomize-controller"), strings.HasPrefix(m, "helm-controller"), strings.HasPrefix(m, "flux"):
		return "Flux, GitOps"
	case m == "helm":
		return "Helm"
	case m == "kubectl-client-side-apply", m == "kubectl" && subresource == "":
		return "kubectl apply"
	case strings.HasPrefix(m, "kubectl-"):
		return "kubectl " + strings.TrimPrefix(m, "kubectl-")
	case m == "kube-controller-manager" && subresource == "scale":
		return "a HorizontalPodAutoscaler, through kube-controller-manager"
	case strings.HasPrefix(m, "keda"):
		return "KEDA"
	}
	return "a second controller or a script"
}

// fightParties names the writers of d's spec: the autoscalers that
// target it, the recent writers of its managedFields that own spec fields
// or write /scale, kubectl apply, a GitOps tool, and the object that
// controls it.
func fightParties(d *appsv1.Deployment, st *State, now time.Time) []party {
	var out []party
	var managers []string
	for _, h := range st.Autoscalers {
		s := fmt.Sprintf("HorizontalPodAutoscaler %s (replicas %d–%d, wants %d)", h.Name, deref(h.Spec.MinReplicas), h.Spec.MaxReplicas, h.Status.DesiredReplicas)
		for _, w := range writers(d) {
			if w.manager == "kube-controller-manager" && w.subresource == "scale" {
				s += fmt.Sprintf(", writing /scale as kube-controller-manager, %s ago", age(now, w.at))
				managers = append(managers, w.manager+"/scale")
				break
			}
		}
		out = append(out, party{name: s, hpa: true})
	}
	ctrl := ""
	for _, w := range writers(d) {
		key := w.manager + "/" + w.subresource
		if w.subresource == "status" || w.at.IsZero() || now.Sub(w.at) > fightWindow || slices.Contains(managers, key) {
			continue
		}
		if !w.spec && w.subresource != "scale" {
			continue
		}
		managers = append(managers, key)
		kind := managerKind(w.manager, w.subresource)
		if kind == "a second controller or a script" {
			if ref := metav1.GetControllerOfNoCopy(d); ref != nil {
				kind = fmt.Sprintf("a second controller: the deployment is controlled by %s/%s", strings.ToLower(ref.Kind), ref.Name)
				ctrl = ref.Name
			}
		}
		out = append(out, party{name: fmt.Sprintf("%s (%s), wrote %s ago", w.manager, kind, age(now, w.at)), hpa: kind == "a HorizontalPodAutoscaler, through kube-controller-manager"})
	}
	if ok, r := lastApplied(d); ok && r != nil && !slices.ContainsFunc(managers, func(m string) bool { return strings.HasPrefix(m, "kubectl-client-side-apply/") }) {
		out = append(out, party{name: fmt.Sprintf("kubectl apply (its last-applied-configuration sets replicas: %d)", *r)})
	}
	if g := gitOps(d); g != "" && !slices.ContainsFunc(out, func(p party) bool { return strings.Contains(p.name, g+", GitOps") }) {
		out = append(out, party{name: g + " (GitOps: its markers are on the deployment; it syncs the spec back to git)"})
	}
	if ref := metav1.GetControllerOfNoCopy(d); ref != nil && ctrl == "" {
		out = append(out, party{name: fmt.Sprintf("%s/%s, which controls the deployment (a second controller)", strings.ToLower(ref.Kind), ref.Name)})
	}
	return out
}
