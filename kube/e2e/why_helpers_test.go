//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// controllerBinary builds ctrlkit-controller once for the package.
var controllerBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ctrlkit-controller")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ctrlkit-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ctrlkit-controller").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ctrlkit-controller: %v\n%s", err, out)
	}
	return bin, nil
})

// kill stops the process with SIGKILL, as a crash or an OOM kill would:
// its Lease is not released.
func (in *instance) kill(t *testing.T) {
	t.Helper()
	if err := in.cmd.Process.Kill(); err != nil { // our own child, by PID
		t.Fatal(err)
	}
	<-in.done
}

// deleteHeld deletes the Deployment name (background propagation, as
// kubectl does) after putting a finalizer on it that nothing removes:
// it stays, being deleted (released at cleanup).
func (e *env) deleteHeld(name string) {
	e.t.Helper()
	patch := []byte(`{"metadata":{"finalizers":["e2e.ctrlkit.io/hold"]}}`)
	if _, err := e.cs.AppsV1().Deployments(e.ns).Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.release("deployments", name) })
	bg := metav1.DeletePropagationBackground
	if err := e.cs.AppsV1().Deployments(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		e.t.Fatal(err)
	}
}

// fight has two writers take turns on web's spec.replicas until the test
// ends or the returned stop is called, as an autoscaler and a GitOps tool
// that both own it do: Argo CD (an Update as
// argocd-application-controller, with its tracking annotation) sets
// from, and a HorizontalPodAutoscaler (maxReplicas to, wanting to) sets
// to through the scale subresource, as kube-controller-manager's HPA
// controller writes it.
func (e *env) fight(from, to int32) (stop func() time.Time) {
	e.t.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: to,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	h, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(e.ns).Create(e.ctx, hpa, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: from, DesiredReplicas: to}
	if _, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(e.ns).UpdateStatus(e.ctx, h, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return e.fightWith(e.updateWriter("argocd-application-controller", from, func(d *appsv1.Deployment) {
		d.Annotations["argocd.argoproj.io/tracking-id"] = "web:apps/Deployment:" + e.ns + "/web"
	}), e.scaleWriter("kube-controller-manager", to))
}

// fightWriter sets web's spec.replicas once, as one writer of a fight.
type fightWriter func(ctx context.Context) error

// updateWriter updates web (a whole-object Update) as manager, setting
// spec.replicas to n and changing what more does.
func (e *env) updateWriter(manager string, n int32, more func(*appsv1.Deployment)) fightWriter {
	deployments := e.cs.AppsV1().Deployments(e.ns)
	return func(ctx context.Context) error {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = &n
		if more != nil {
			more(d)
		}
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: manager})
		return err
	}
}

// scaleWriter sets web's replicas to n through the scale subresource, as
// manager.
func (e *env) scaleWriter(manager string, n int32) fightWriter {
	deployments := e.cs.AppsV1().Deployments(e.ns)
	return func(ctx context.Context) error {
		sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
		_, err := deployments.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{FieldManager: manager})
		return err
	}
}

// fightWith has the writers take turns, one every 1.5 s (the writers' own
// pace: what is being reproduced), until the test ends or stop is
// called; stop returns when the last write was made.
func (e *env) fightWith(writers ...fightWriter) (stop func() time.Time) {
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	var last time.Time // written by the goroutine, read after wg.Wait
	wg.Go(func() {
		tick := time.NewTicker(1500 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := writers[i%len(writers)](ctx)
			if err == nil {
				last = time.Now()
			}
			if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
				e.t.Logf("fight: %v", err)
			}
		}
	})
	stop = func() time.Time {
		cancel()
		wg.Wait()
		return last
	}
	e.t.Cleanup(func() { stop() })
	return stop
}

// admitted creates a pod of image img in dry-run until admission answers
// as want says (the API server picks admission configuration up from its
// informers, a moment after it is written).
func (e *env) admitted(img string, want func(error) bool, what string) {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img}}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.cs.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if want(err) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: admission still answers %v", what, err)
		}
		time.Sleep(100 * time.Millisecond) // a poll of the API server's state
	}
}

// deadWebhook registers a validating webhook for the pods of the test's
// namespace whose server is down (nothing listens on 127.0.0.1:1), with
// failurePolicy Fail: every pod creation there fails.
func (e *env) deadWebhook() {
	e.t.Helper()
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/validate"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "why-" + e.ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "pods.why.ctrlkit.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}},
			FailurePolicy:     &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: new(int32(2))}}}
	if _, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(e.ctx, cfg, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(e.ctx, cfg.Name, metav1.DeleteOptions{})
	})
	e.admitted("app:1", func(err error) bool { return err != nil && strings.Contains(err.Error(), "failed calling webhook") }, "dead webhook")
}

// denyImage makes a ValidatingAdmissionPolicy, bound to the test's
// namespace, deny pods running img.
func (e *env) denyImage(img string) {
	e.t.Helper()
	name := "why-" + e.ns
	fail := admissionregistrationv1.Fail
	pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("object.spec.containers.all(c, c.image != %q)", img),
				Message: img + " is not allowed in this namespace"}}}}
	bind := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}}}}}
	ar := e.cs.AdmissionregistrationV1()
	if _, err := ar.ValidatingAdmissionPolicies().Create(e.ctx, pol, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(e.ctx, bind, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = ar.ValidatingAdmissionPolicyBindings().Delete(e.ctx, name, metav1.DeleteOptions{})
		_ = ar.ValidatingAdmissionPolicies().Delete(e.ctx, name, metav1.DeleteOptions{})
	})
	e.admitted(img, func(err error) bool { return err != nil && strings.Contains(err.Error(), "denied request") }, "admission policy")
}

// countQuota creates a ResourceQuota of n objects of resource (e.g.
// count/replicasets.apps), once the quota controller has counted them.
func (e *env) countQuota(res corev1.ResourceName, n int64) {
	e.t.Helper()
	e.resourceQuota("objects", res, n)
}

// hpaAtMax creates a HorizontalPodAutoscaler of web with maxReplicas max
// and plays its controller once, as it writes the status of an
// autoscaler pinned at its maximum under load (cpu at 180% of a 50%
// target): no HPA controller or metrics server runs here.
func (e *env) hpaAtMax(max int32) {
	e.t.Helper()
	target, cur := int32(50), int32(180)
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: max,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}}}}
	h, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(e.ns).Create(e.ctx, h, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	now := metav1.Now()
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: max, DesiredReplicas: max, LastScaleTime: &now,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &cur, AverageValue: resource.NewMilliQuantity(180, resource.DecimalSI)}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: now},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound",
				Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: now},
			{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: "TooManyReplicas",
				Message: "the desired replica count is more than the maximum replica count", LastTransitionTime: now}}}
	if _, err := e.cs.AutoscalingV2().HorizontalPodAutoscalers(e.ns).UpdateStatus(e.ctx, h, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// drainRefused evicts one of web's pods, as kubectl drain does, once the
// disruption controller has computed the budget, and checks that the
// API server refuses it (429).
func (e *env) drainRefused() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pdb, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == 3 {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the disruption controller did not compute the budget: %+v", pdb.Status)
		}
		time.Sleep(100 * time.Millisecond) // a poll of the controller's status
	}
	p := e.pods()[0]
	err := e.cs.PolicyV1().Evictions(e.ns).Evict(e.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: e.ns}})
	if !apierrors.IsTooManyRequests(err) {
		e.t.Fatalf("eviction of %s: %v; want 429 (the budget allows no disruption)", p.Name, err)
	}
	e.t.Logf("drain refused: %v", err)
}
