package plugin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// party is one writer of the spec that Why can name: hpa for an
// autoscaler, hint for what the object records about a writer not seen
// writing.
type party struct {
	name      string
	hpa, hint bool
}

// replicasWriters names the writers of spec.replicas in a fight over it:
// the managers seen setting it while Fetch watched, the managers that own
// it now in managedFields, and the autoscalers that target d (an
// autoscaler writes /scale as kube-controller-manager: those writes are
// its own). Managers that own only other fields are not writers of it.
// With fewer than two, the hints: kubectl's last-applied-configuration
// when it sets replicas, GitOps markers, the object that controls d.
func replicasWriters(d *appsv1.Deployment, st *State, now time.Time) []party {
	type seen struct {
		values []int32
		times  int
		last   time.Time
		owns   bool
	}
	byKey := map[string]*seen{}
	var order []string
	note := func(key string) *seen {
		if byKey[key] == nil {
			byKey[key] = &seen{}
			order = append(order, key)
		}
		return byKey[key]
	}
	for _, w := range st.ReplicasWrites {
		for _, o := range w.Owners {
			s := note(o)
			s.times++
			s.last = later(s.last, w.At)
			if !slices.Contains(s.values, w.Replicas) {
				s.values = append(s.values, w.Replicas)
			}
		}
	}
	for _, w := range writers(d) {
		if !w.replicas || w.subresource == "status" {
			continue
		}
		s := note(ownerKey(w.manager, w.subresource))
		s.owns = true
		s.last = later(s.last, w.at)
	}
	var out []party
	for _, h := range st.Autoscalers {
		name := fmt.Sprintf("HorizontalPodAutoscaler %s (replicas %d–%d, wants %d)", h.Name, deref(h.Spec.MinReplicas), h.Spec.MaxReplicas, h.Status.DesiredReplicas)
		if s := byKey[ownerKey("kube-controller-manager", "scale")]; s != nil {
			name += ", writing /scale as kube-controller-manager" + seenText(s.values, s.times, s.owns, now, s.last, d)
			delete(byKey, ownerKey("kube-controller-manager", "scale"))
		}
		out = append(out, party{name: name, hpa: true})
	}
	for _, key := range order {
		s := byKey[key]
		if s == nil {
			continue
		}
		manager, sub, _ := strings.Cut(strings.TrimSuffix(key, ")"), " (/")
		kind := managerKind(manager, sub)
		if kind == "a second controller or a script" {
			if ref := metav1.GetControllerOfNoCopy(d); ref != nil {
				kind = fmt.Sprintf("a second controller: the deployment is controlled by %s/%s", strings.ToLower(ref.Kind), ref.Name)
			}
		}
		out = append(out, party{name: fmt.Sprintf("%s (%s)%s", key, kind, seenText(s.values, s.times, s.owns, now, s.last, d)),
			hpa: kind == "a HorizontalPodAutoscaler, through kube-controller-manager"})
	}
	if len(out) >= 2 {
		return out
	}
	named := func(sub string) bool {
		return slices.ContainsFunc(out, func(p party) bool { return strings.Contains(p.name, sub) })
	}
	if ok, r := lastApplied(d); ok && r != nil && !named("kubectl apply") {
		out = append(out, party{name: fmt.Sprintf("kubectl apply, re-applied in a loop (its last-applied-configuration sets replicas: %d)", *r), hint: true})
	}
	if g := gitOps(d); g != "" && !named(g+", GitOps") {
		out = append(out, party{name: g + " (GitOps: its markers are on the deployment; it syncs the spec back to git)", hint: true})
	}
	if ref := metav1.GetControllerOfNoCopy(d); ref != nil && !named("controlled by") {
		out = append(out, party{name: fmt.Sprintf("%s/%s, which controls the deployment (a second controller)", strings.ToLower(ref.Kind), ref.Name), hint: true})
	}
	return out
}

// ownerKey names a managedFields manager as ReplicasWrite.Owners does.
func ownerKey(manager, subresource string) string {
	if subresource == "" {
		return manager
	}
	return manager + " (/" + subresource + ")"
}

// seenText says what a writer of spec.replicas was seen doing.
func seenText(values []int32, times int, owns bool, now, last time.Time, d *appsv1.Deployment) string {
	var parts []string
	if times > 0 {
		vs := make([]string, len(values))
		for i, v := range values {
			vs[i] = fmt.Sprint(v)
		}
		n := map[int]string{1: "once", 2: "twice"}[times]
		if n == "" {
			n = fmt.Sprintf("%d times", times)
		}
		parts = append(parts, fmt.Sprintf("seen setting it to %s (%s)", strings.Join(vs, " and "), n))
	}
	if owns {
		parts = append(parts, fmt.Sprintf("owns it now (replicas: %d)", replicas(d.Spec.Replicas)))
	}
	if !last.IsZero() {
		parts = append(parts, fmt.Sprintf("wrote %s ago", age(now, last)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// specWriters names the writers of d's spec in a fight over the
// template: the autoscalers that target it, the recent writers of its
// managedFields that own spec fields or write /scale, kubectl apply, a
// GitOps tool, and the object that controls it.
func specWriters(d *appsv1.Deployment, st *State, now time.Time) []party {
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
