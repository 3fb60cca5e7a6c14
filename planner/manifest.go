package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// DecodeDeployments reads every apps/v1 Deployment of a manifest — YAML
// (several documents, anchors and all) or JSON, through apimachinery's
// YAML-or-JSON decoder — applies the API defaults the planner relies on
// (replicas 1, RollingUpdate 25%/25%) and rejects what the API server
// would reject, with errors that name the document and the field.
// Documents of other kinds are skipped; a manifest with no Deployment at
// all is an error. Unknown fields are errors, as kubectl's strict field
// validation makes them.
func DecodeDeployments(src []byte) ([]*appsv1.Deployment, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(src), 4096)
	var out []*appsv1.Deployment
	var others []string
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue // an empty document
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return nil, fmt.Errorf("document %d: not a Kubernetes object: %w", doc, err)
		}
		if tm.Kind != "Deployment" {
			others = append(others, fmt.Sprintf("%q", tm.Kind))
			continue
		}
		if tm.APIVersion != "apps/v1" {
			return nil, fmt.Errorf("document %d: apiVersion is %q, want apps/v1", doc, tm.APIVersion)
		}
		jd := json.NewDecoder(bytes.NewReader(raw))
		jd.DisallowUnknownFields()
		d := &appsv1.Deployment{}
		if err := jd.Decode(d); err != nil {
			return nil, fmt.Errorf("document %d: invalid Deployment: %w", doc, err)
		}
		if err := defaultAndValidate(d); err != nil {
			return nil, fmt.Errorf("document %d (deployment %q): %w", doc, d.Name, err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		if len(others) > 0 {
			return nil, fmt.Errorf("no Deployment in the manifest (found kind %s)", strings.Join(others, ", "))
		}
		return nil, errors.New("no Deployment in the manifest (it is empty)")
	}
	return out, nil
}

// defaultAndValidate applies the API defaults and rejects what the API
// server would reject (the subset that matters to a plan).
func defaultAndValidate(d *appsv1.Deployment) error {
	var errs []string
	if d.Name == "" {
		errs = append(errs, "metadata.name is required")
	}
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr(int32(1))
	}
	if *d.Spec.Replicas < 0 {
		errs = append(errs, "spec.replicas must not be negative")
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		errs = append(errs, "spec.template.spec.containers is required (missing template?)")
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, "spec.selector is required and must not be empty")
	} else if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil {
		errs = append(errs, "spec.selector: "+err.Error())
	} else if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		errs = append(errs, "spec.selector does not match spec.template.metadata.labels")
	}
	switch d.Spec.Strategy.Type {
	case "", appsv1.RollingUpdateDeploymentStrategyType:
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		if d.Spec.Strategy.RollingUpdate == nil {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := d.Spec.Strategy.RollingUpdate
		for _, p := range []**intstr.IntOrString{&ru.MaxSurge, &ru.MaxUnavailable} {
			if *p == nil {
				v := intstr.FromString("25%")
				*p = &v
			}
		}
		surge, unavail, err := rollout.ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, *d.Spec.Replicas)
		switch {
		case err != nil:
			errs = append(errs, "spec.strategy.rollingUpdate: "+err.Error())
		case surge < 0 || unavail < 0 || negative(ru.MaxSurge) || negative(ru.MaxUnavailable):
			errs = append(errs, "spec.strategy.rollingUpdate: maxSurge and maxUnavailable must not be negative")
		case isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable):
			errs = append(errs, "spec.strategy.rollingUpdate: maxSurge and maxUnavailable may not both be 0")
		}
	case appsv1.RecreateDeploymentStrategyType:
		if d.Spec.Strategy.RollingUpdate != nil {
			errs = append(errs, "spec.strategy.rollingUpdate may not be set with type Recreate")
		}
	default:
		errs = append(errs, fmt.Sprintf("spec.strategy.type %q is neither RollingUpdate nor Recreate", d.Spec.Strategy.Type))
	}
	if len(errs) > 0 {
		return errors.New("invalid Deployment: " + strings.Join(errs, "; "))
	}
	return nil
}

func negative(v *intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal < 0
	}
	return strings.HasPrefix(v.StrVal, "-")
}

func isZero(v *intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	return v.StrVal == "0%" || v.StrVal == "0"
}
