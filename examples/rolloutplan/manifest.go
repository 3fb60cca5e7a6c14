package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// readDeployment reads, decodes, defaults and validates the manifest at
// path. Errors name the file and say what is wrong.
func readDeployment(path string) (*appsv1.Deployment, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d, err := decodeDeployment(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

func decodeDeployment(src []byte) (*appsv1.Deployment, error) {
	data := src
	if t := bytes.TrimSpace(src); len(t) == 0 || t[0] != '{' {
		j, err := yamlToJSON(string(src))
		if err != nil {
			return nil, err
		}
		data = j
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.Kind != "Deployment" {
		return nil, fmt.Errorf("kind is %q, want Deployment", tm.Kind)
	}
	if tm.APIVersion != "apps/v1" {
		return nil, fmt.Errorf("apiVersion is %q, want apps/v1", tm.APIVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	d := &appsv1.Deployment{}
	if err := dec.Decode(d); err != nil {
		return nil, fmt.Errorf("invalid Deployment: %w", err)
	}
	if err := defaultAndValidate(d); err != nil {
		return nil, err
	}
	return d, nil
}

// defaultAndValidate applies the API defaults the report prints and
// rejects what the API server would reject (the subset that matters here).
func defaultAndValidate(d *appsv1.Deployment) error {
	var errs []string
	if d.Name == "" {
		errs = append(errs, "metadata.name is required")
	}
	if d.Spec.Replicas == nil {
		one := int32(1)
		d.Spec.Replicas = &one
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
