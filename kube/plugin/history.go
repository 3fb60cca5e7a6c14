package plugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// HistoryReport is the answer of `kubectl ctrlkit history`: kubectl's
// revisions and change causes, and what changed from each revision to the
// next.
type HistoryReport struct {
	Deployment string     `json:"deployment"`
	Namespace  string     `json:"namespace"`
	Revisions  []Revision `json:"revisions"`
	// Warnings are ReplicaSets skipped (a revision that does not parse).
	Warnings []string `json:"warnings,omitempty"`
}

// Revision is one revision of a Deployment.
type Revision struct {
	Revision   int64     `json:"revision"`
	ReplicaSet string    `json:"replicaSet"`
	Created    time.Time `json:"created"`
	// ChangeCause is the kubernetes.io/change-cause annotation.
	ChangeCause string   `json:"changeCause,omitempty"`
	Images      []string `json:"images"`
	// Replicas and Available are the ReplicaSet's spec and status.
	Replicas  int32 `json:"replicas"`
	Available int32 `json:"available"`
	// Current marks the revision of the Deployment's template.
	Current bool `json:"current,omitempty"`
	// Aliases are earlier revision numbers this template had (a rollback
	// renumbers it; revision-history annotation).
	Aliases []int64 `json:"aliases,omitempty"`
	// Changes are the pod template's differences from the previous
	// revision (none for the first).
	Changes []TemplateChange `json:"changes,omitempty"`
}

// TemplateChange is one field that differs between two pod templates.
type TemplateChange struct {
	// Path is the field, e.g. spec.containers[app].image (list items
	// with a name are keyed by it).
	Path string `json:"path"`
	// From and To are JSON values; empty when the field is absent.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// History lists the revisions of st's Deployment, oldest first, with the
// changes between consecutive ones. It is pure.
func History(st *State) (HistoryReport, error) {
	d := st.Deployment
	r := HistoryReport{Deployment: d.Name, Namespace: d.Namespace}
	owned := rollout.OwnedReplicaSets(d, st.ReplicaSets)
	entries, err := rollout.History(d, owned)
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	}
	newRS := rollout.FindNewReplicaSet(d, owned)
	var prev *corev1.PodTemplateSpec
	for _, e := range entries {
		rs := e.ReplicaSet
		rev := Revision{Revision: e.Revision, ReplicaSet: rs.Name, Created: rs.CreationTimestamp.UTC(),
			ChangeCause: e.ChangeCause, Replicas: replicas(rs.Spec.Replicas), Available: rs.Status.AvailableReplicas,
			Current: newRS != nil && rs.UID == newRS.UID, Aliases: e.Aliases}
		for _, c := range rs.Spec.Template.Spec.Containers {
			rev.Images = append(rev.Images, c.Image)
		}
		tpl := &rs.Spec.Template
		if prev != nil {
			rev.Changes, err = DiffTemplates(prev, tpl)
			if err != nil {
				return r, err
			}
		}
		prev = tpl
		r.Revisions = append(r.Revisions, rev)
	}
	return r, nil
}

// DiffTemplates lists the fields that differ between two pod templates,
// sorted by path; the pod-template-hash label is ignored.
func DiffTemplates(a, b *corev1.PodTemplateSpec) ([]TemplateChange, error) {
	fa, err := flatten(a)
	if err != nil {
		return nil, err
	}
	fb, err := flatten(b)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(fa))
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []TemplateChange
	for _, k := range keys {
		if fa[k] != fb[k] {
			out = append(out, TemplateChange{Path: k, From: fa[k], To: fb[k]})
		}
	}
	return out, nil
}

// flatten turns a template into path → JSON value of its leaves.
func flatten(t *corev1.PodTemplateSpec) (map[string]string, error) {
	c := t.DeepCopy()
	delete(c.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	out := map[string]string{}
	walk("", v, out)
	return out, nil
}

func walk(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return
		}
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.ContainsAny(k, "./") && path != "" {
				p = fmt.Sprintf("%s[%q]", path, k) // label and annotation keys
			}
			walk(p, e, out)
		}
	case []any:
		for i, e := range x {
			key := fmt.Sprint(i)
			if m, ok := e.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					key = n
				}
			}
			walk(fmt.Sprintf("%s[%s]", path, key), e, out)
		}
	case string:
		out[path] = strconv.Quote(x)
	case float64:
		out[path] = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		out[path] = strconv.FormatBool(x)
	case nil:
		out[path] = "null"
	}
}
