package clustertest

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// maxLines bounds each part of what describe lists.
const maxLines = 20

// describe says what is stuck, one line per thing, most telling first:
// what the test started that stopped with an error; kinds the managers'
// caches wait on (a kind the cluster does not serve, an informer that
// does not sync); reconcile workers blocked on something else than the
// cluster; custom resources whose status says they are not ready (their
// conditions, an unobserved generation); Deployments not rolled out; pods
// not ready, and why; REST paths the bench does not serve; and when the
// cluster last changed.
func (c *Cluster) describe() string {
	var lines []string
	lines = append(lines, c.failures()...)
	lines = append(lines, c.kinds.describe()...)
	if c.bubble != 0 {
		lines = append(lines, capped(blockedWorkers(c.bubble, c.opts.shared))...)
	}
	lines = append(lines, c.rec.describe(c.scheme)...)
	if len(lines) == 0 {
		return ""
	}
	return "\n" + strings.Join(lines, "\n")
}

// failures lists what was started with Start and stopped with an error.
func (c *Cluster) failures() []string {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	var out []string
	for _, err := range c.errs {
		out = append(out, err.Error())
	}
	return out
}

func capped(lines []string) []string {
	if len(lines) > maxLines {
		return append(lines[:maxLines:maxLines], fmt.Sprintf("... and %d more", len(lines)-maxLines))
	}
	return lines
}

// describe lists, from the latest state of every object the recorder
// keeps (no request to the cluster: what is stuck is told without
// touching it), the custom resources, Deployments and pods that are not
// ready, the requests that keep failing, the REST paths not served, and
// the time of the last change.
func (r *recorder) describe(s *runtime.Scheme) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var crs, deps, pods []string
	for _, res := range slices.Sorted(maps.Keys(r.objs)) {
		objs := r.objs[res]
		for _, key := range slices.SortedFunc(maps.Keys(objs), compareKeys) {
			switch obj := objs[key].(type) {
			case *appsv1.Deployment:
				if l := deploymentNotReady(obj); l != "" {
					deps = append(deps, l)
				}
			case *corev1.Pod:
				if l := podNotReady(obj); l != "" {
					pods = append(pods, l)
				}
			default:
				if custom(obj) {
					if l := customNotReady(s, obj); l != "" {
						crs = append(crs, l)
					}
				}
			}
		}
	}
	out := append(capped(crs), capped(deps)...)
	out = append(out, capped(pods)...)
	var fails []string
	for _, k := range slices.Sorted(maps.Keys(r.failing)) {
		f := r.failing[k]
		fails = append(fails, fmt.Sprintf("failing: %s, %d times in a row (the last: %s)", k, f.n, f.last))
	}
	out = append(out, capped(fails)...)
	for _, p := range slices.Sorted(maps.Keys(r.unserved)) {
		out = append(out, fmt.Sprintf("not served by the bench: %s (%d requests answered 404)", p, r.unserved[p]))
	}
	if !r.changed.IsZero() {
		out = append(out, fmt.Sprintf("last write stored at +%v", r.changed.Sub(r.start)))
	} else {
		out = append(out, "nothing written yet")
	}
	return out
}

// custom reports whether obj is of a kind other than Kubernetes' own: a
// Go type from outside k8s.io/api, or an unstructured object.
func custom(obj memcluster.Object) bool {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return true
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return !strings.HasPrefix(t.PkgPath(), "k8s.io/api/")
}

func deploymentNotReady(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want {
		return ""
	}
	return fmt.Sprintf("deployment %s/%s: %d desired, %d updated, %d available", d.Namespace, d.Name, want, st.UpdatedReplicas, st.AvailableReplicas)
}

func podNotReady(p *corev1.Pod) string {
	if ready(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return ""
	}
	line := fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, cmp.Or(string(p.Status.Phase), "unscheduled"))
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			line += fmt.Sprintf(", container %s %s", cs.Name, w.Reason)
		}
	}
	if p.DeletionTimestamp != nil {
		line += ", terminating"
	}
	return line
}

func ready(p *corev1.Pod) bool {
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodReady {
			return cd.Status == corev1.ConditionTrue
		}
	}
	return false
}

// negative are condition types that are bad news when True; neutral
// ones are news neither way; the others are bad news when not True.
var (
	negative = map[string]bool{
		"Degraded": true, "Failed": true, "Stalled": true, "Reconciling": true, "Error": true,
		"ReplicaFailure": true, "Terminating": true, "Paused": true, "Suspended": true,
	}
	neutral = map[string]bool{"Progressing": true}
)

// customNotReady describes a custom resource whose status says it is not
// ready: a condition that is bad news ("Ready=False reason
// WaitingForPods message \"0 of 2 pods ready\""), status.ready false, a
// generation its status has not observed, or no status at all. Otherwise
// it returns "".
func customNotReady(s *runtime.Scheme, obj memcluster.Object) string {
	m, err := toMap(obj)
	if err != nil {
		return ""
	}
	var why []string
	status, _ := m["status"].(map[string]any)
	if gen := obj.GetGeneration(); status != nil {
		if og, ok := number(status["observedGeneration"]); ok && og < gen {
			why = append(why, fmt.Sprintf("generation %d not observed (status.observedGeneration %d)", gen, og))
		}
	}
	if ready, ok := status["ready"].(bool); ok && !ready {
		why = append(why, "status.ready false")
	}
	conds, _ := status["conditions"].([]any)
	bad := false
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		typ, _ := cm["type"].(string)
		st, _ := cm["status"].(string)
		if !neutral[typ] && negative[typ] == (st == "True") {
			bad = true
		}
	}
	if bad {
		// Every condition, the good ones too: they tell the story together.
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			why = append(why, conditionText(cm))
		}
	}
	if len(status) == 0 {
		why = append(why, "no status (never reconciled?)")
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s: %s", kindName(s, obj), objectText(obj.GetNamespace(), obj.GetName()), strings.Join(why, "; "))
}

// conditionText is "Ready=False reason R message \"M\"".
func conditionText(c map[string]any) string {
	t := fmt.Sprintf("%v=%v", c["type"], c["status"])
	if r, _ := c["reason"].(string); r != "" {
		t += " reason " + r
	}
	if m, _ := c["message"].(string); m != "" {
		t += fmt.Sprintf(" message %q", m)
	}
	return t
}

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// kindName is obj's kind in lower case ("webapp"), as kubectl names it.
func kindName(s *runtime.Scheme, obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" && s != nil {
		if gvks, _, err := s.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			kind = gvks[0].Kind
		}
	}
	return strings.ToLower(cmp.Or(kind, fmt.Sprintf("%T", obj)))
}
