package admission

import (
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel"
	celenv "k8s.io/apiserver/pkg/cel/environment"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// CheckExpressions compiles the CEL expressions of a configuration being
// written (obj; old is the stored one on update, else nil), as
// kube-apiserver's validation does, with k8s.io/apiserver's compilers,
// and returns their errors at the fields kube-apiserver names: the match
// conditions of webhook configurations, and the variables, match
// conditions, validations, message expressions and audit annotations of
// ValidatingAdmissionPolicies. An expression the stored object already
// had is compiled in the environment of stored expressions, as
// kube-apiserver does. (MutatingAdmissionPolicies' expressions are not
// checked: they fail when evaluated.)
func (a *Admission) CheckExpressions(obj, old runtime.Object) field.ErrorList {
	stored := sets.New[string]()
	addStored := func(exprs ...string) { stored.Insert(exprs...) }
	switch o := old.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			addStored(conditionExpressions(w.MatchConditions)...)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			addStored(conditionExpressions(w.MatchConditions)...)
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		addStored(conditionExpressions(o.Spec.MatchConditions)...)
		for _, v := range o.Spec.Validations {
			addStored(v.Expression, v.MessageExpression)
		}
		for _, v := range o.Spec.Variables {
			addStored(v.Expression)
		}
		for _, v := range o.Spec.AuditAnnotations {
			addStored(v.ValueExpression)
		}
	}
	env := func(expr string) celenv.Type {
		if stored.Has(expr) {
			return celenv.StoredExpressions
		}
		return celenv.NewExpressions
	}
	var errs field.ErrorList
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i, w := range o.Webhooks {
			errs = append(errs, a.checkConditions(w.MatchConditions, false, env, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i, w := range o.Webhooks {
			errs = append(errs, a.checkConditions(w.MatchConditions, false, env, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		errs = append(errs, a.checkPolicy(&o.Spec, env)...)
	}
	return errs
}

var _ admit.ExpressionChecker = (*Admission)(nil)

func conditionExpressions(mcs []admissionregistrationv1.MatchCondition) []string {
	out := make([]string, len(mcs))
	for i, mc := range mcs {
		out[i] = mc.Expression
	}
	return out
}

// compilers holds the stateless compiler kube-apiserver's validation
// uses, built at its first use (building CEL's environment takes a
// while).
type compilers struct {
	once      sync.Once
	stateless plugincel.Compiler
}

func (c *compilers) get() plugincel.Compiler {
	c.once.Do(func() {
		c.stateless = plugincel.NewCompiler(celenv.MustBaseEnvSet(celenv.DefaultCompatibilityVersion()))
	})
	return c.stateless
}

// checkConditions compiles match conditions (params: they may use the
// policy's params).
func (a *Admission) checkConditions(mcs []admissionregistrationv1.MatchCondition, params bool, env func(string) celenv.Type, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, mc := range mcs {
		expr := strings.TrimSpace(mc.Expression)
		if expr == "" {
			continue // refused by memcluster's validation already
		}
		errs = append(errs, compile(a.compilers.get(), &matchconditions.MatchCondition{Expression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, env(mc.Expression), p.Index(i).Child("expression"))...)
	}
	return errs
}

// checkPolicy compiles a ValidatingAdmissionPolicy's expressions.
func (a *Admission) checkPolicy(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec, env func(string) celenv.Type) field.ErrorList {
	p := field.NewPath("spec")
	params := spec.ParamKind != nil
	var compiler plugincel.Compiler = a.compilers.get()
	var errs field.ErrorList
	if len(spec.Variables) > 0 {
		composited, err := plugincel.NewCompositedCompiler(celenv.MustBaseEnvSet(celenv.DefaultCompatibilityVersion()))
		if err != nil {
			return field.ErrorList{field.InternalError(p.Child("variables"), err)}
		}
		for i, v := range spec.Variables {
			if strings.TrimSpace(v.Expression) == "" {
				continue
			}
			result := composited.CompileAndStoreVariable(&validatingpolicy.Variable{Name: v.Name, Expression: v.Expression},
				plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, env(v.Expression))
			if result.Error != nil {
				errs = append(errs, celError(p.Child("variables").Index(i).Child("expression"), v.Expression, result.Error))
			}
		}
		compiler = composited
	}
	errs = append(errs, a.checkConditions(spec.MatchConditions, params, env, p.Child("matchConditions"))...)
	for i, v := range spec.Validations {
		vp := p.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) != "" {
			errs = append(errs, compile(compiler, &validatingpolicy.ValidationCondition{Expression: v.Expression},
				plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, env(v.Expression), vp.Child("expression"))...)
		}
		if strings.TrimSpace(v.MessageExpression) != "" {
			errs = append(errs, compile(compiler, &validatingpolicy.MessageExpressionCondition{MessageExpression: v.MessageExpression},
				plugincel.OptionalVariableDeclarations{HasParams: params}, env(v.MessageExpression), vp.Child("messageExpression"))...)
		}
	}
	for i, aa := range spec.AuditAnnotations {
		expr := strings.TrimSpace(aa.ValueExpression)
		if expr == "" {
			continue
		}
		result := compiler.CompileCELExpression(&validatingpolicy.AuditAnnotationCondition{ValueExpression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, env(aa.ValueExpression))
		if result.Error != nil {
			errs = append(errs, celError(p.Child("auditAnnotations").Index(i).Child("valueExpression"), aa.ValueExpression, result.Error))
		}
	}
	return errs
}

// compile returns the error of compiling expression, as kube-apiserver's
// validation reports it.
func compile(c plugincel.Compiler, expression plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env celenv.Type, p *field.Path) field.ErrorList {
	result := c.CompileCELExpression(expression, decls, env)
	if result.Error == nil {
		return nil
	}
	return field.ErrorList{celError(p, expression.GetExpression(), result.Error)}
}

// celError is a compilation error as a field error: Required, Invalid
// (with the expression as the value) or Internal, by its type.
func celError(p *field.Path, expression string, err error) *field.Error {
	if e, ok := err.(*cel.Error); ok {
		switch e.Type {
		case cel.ErrorTypeRequired:
			return field.Required(p, e.Detail)
		case cel.ErrorTypeInvalid:
			return field.Invalid(p, expression, e.Detail)
		case cel.ErrorTypeInternal:
			return field.InternalError(p, e)
		}
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}
