// Package validate holds the one rule by which ctrlkit's controllers
// refuse a spec: what kube-apiserver rejects in the selector and template
// labels of a Deployment or a ReplicaSet (apps/v1 validation:
// ValidateDeploymentSpec, ValidateReplicaSetSpec). The API server never
// stores such an object, but a spec built in Go, or a custom workload's
// that no API server validates, reaches the controllers all the same:
// both refuse it with the same words, naming the object, rather than plan
// pods that no selector owns.
package validate

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrNoLabels is wrapped by the error for a pod template without labels:
// no pod can be created from it (upstream's words). Package replicaset
// exports it.
var ErrNoLabels = errors.New("unable to create pods, no labels")

// Matcher is a selector compiled by the caller.
type Matcher interface {
	Matches(labels map[string]string) bool
}

// Selector returns an error naming the object ("ReplicaSet ns/web") when
// sel is nil, empty or invalid, when tmpl (the template's labels) is
// empty, or when sel does not match tmpl; nil when the spec is sound.
// m, if not nil, is sel compiled by the caller (a sync that has it
// allocates nothing when the spec is sound); nil compiles it here.
func Selector(kind string, obj metav1.Object, sel *metav1.LabelSelector, tmpl map[string]string, m Matcher) error {
	switch {
	case sel == nil:
		return fmt.Errorf("%s: spec.selector is nil; the API server requires one", name(kind, obj))
	case len(sel.MatchLabels)+len(sel.MatchExpressions) == 0:
		return fmt.Errorf("%s: spec.selector is empty; the API server rejects it", name(kind, obj))
	case len(tmpl) == 0:
		return fmt.Errorf("%s: spec.template.metadata.labels is empty: %w", name(kind, obj), ErrNoLabels)
	}
	if m == nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return fmt.Errorf("%s: spec.selector is invalid: %w", name(kind, obj), err)
		}
		m = compiled{s}
	}
	if !m.Matches(tmpl) {
		return fmt.Errorf("%s: spec.selector %q does not match spec.template.metadata.labels %q; the API server rejects it",
			name(kind, obj), metav1.FormatLabelSelector(sel), labels.Set(tmpl))
	}
	return nil
}

func name(kind string, obj metav1.Object) string {
	if obj == nil {
		return kind
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

type compiled struct{ s labels.Selector }

func (c compiled) Matches(l map[string]string) bool { return c.s.Matches(labels.Set(l)) }
