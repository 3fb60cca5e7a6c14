package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	upstreamcore "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/planner"
)

// quotaPods are pods of every shape the pod evaluator distinguishes.
func quotaPods(now time.Time) map[string]*corev1.Pod {
	q := resource.MustParse
	c := func(name string, req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Image: "app:1", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	always := corev1.ContainerRestartPolicyAlways
	side := c("proxy", corev1.ResourceList{"cpu": q("100m"), "memory": q("32Mi")}, nil)
	side.RestartPolicy = &always
	gone := metav1.NewTime(now.Add(-time.Minute))
	soon := metav1.NewTime(now.Add(10 * time.Second))
	pods := map[string]*corev1.Pod{
		"bare":            {Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", nil, nil)}}},
		"requests+limits": {Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("250m"), "memory": q("64Mi"), "ephemeral-storage": q("1Gi")}, corev1.ResourceList{"cpu": q("1"), "memory": q("128Mi")})}}},
		"two containers":  {Spec: corev1.PodSpec{Containers: []corev1.Container{c("a", corev1.ResourceList{"cpu": q("100m")}, nil), c("b", corev1.ResourceList{"cpu": q("300m")}, corev1.ResourceList{"cpu": q("1")})}}},
		"init and sidecar": {Spec: corev1.PodSpec{InitContainers: []corev1.Container{side, c("migrate", corev1.ResourceList{"cpu": q("2"), "memory": q("16Mi")}, nil)},
			Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("500m"), "memory": q("256Mi")}, nil)}}},
		"overhead": {Spec: corev1.PodSpec{Overhead: corev1.ResourceList{"cpu": q("10m"), "memory": q("8Mi")},
			Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("100m")}, corev1.ResourceList{"cpu": q("200m")})}}},
		"pod-level": {Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}, Limits: corev1.ResourceList{"cpu": q("2")}},
			Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("100m")}, nil)}}},
		"hugepages and a device": {Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "example.com/gpu": q("1"), "memory": q("1Gi")},
			corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "example.com/gpu": q("1")})}}},
		"succeeded":            {Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("1")}, nil)}}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		"failed":               {Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("1")}, nil)}}, Status: corev1.PodStatus{Phase: corev1.PodFailed}},
		"terminating":          {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &soon, DeletionGracePeriodSeconds: new(int64(30))}, Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("1")}, nil)}}},
		"stuck terminating":    {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &gone, DeletionGracePeriodSeconds: new(int64(30))}, Spec: corev1.PodSpec{Containers: []corev1.Container{c("app", corev1.ResourceList{"cpu": q("1")}, nil)}}},
		"best effort deadline": {Spec: corev1.PodSpec{ActiveDeadlineSeconds: new(int64(60)), Containers: []corev1.Container{c("app", nil, nil)}}},
		"priority high":        {Spec: corev1.PodSpec{PriorityClassName: "high", Containers: []corev1.Container{c("app", corev1.ResourceList{"memory": q("1Gi")}, corev1.ResourceList{"memory": q("1Gi")})}}},
	}
	for name, p := range pods {
		p.Name, p.Namespace = name, "shop"
	}
	return pods
}

// TestPodUsageMatchesUpstream: planner.PodUsage charges every pod what
// kube-apiserver's pod quota evaluator (PodUsageFunc, v1.37 feature gates
// at their defaults) charges it.
func TestPodUsageMatchesUpstream(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, p := range quotaPods(now) {
		want, err := core.PodUsageFunc(p, clocktesting.NewFakeClock(now))
		if err != nil {
			t.Fatal(err)
		}
		got := planner.PodUsage(p, now)
		if !quota.Equals(want, got) {
			t.Errorf("%s: PodUsage = %v; upstream charges %v", name, got, want)
		}
	}
}

// TestAdmitPodMatchesUpstream: planner.AdmitPod admits and refuses pods,
// with the same message, as kube-apiserver's ResourceQuota admission
// (CheckRequest with the pod evaluator) does, for quotas whose usage is
// that of the pods held, on every resource name and scope.
func TestAdmitPodMatchesUpstream(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pods := quotaPods(now)
	q := resource.MustParse
	quotas := []planner.Quota{
		{Name: "pods", Hard: corev1.ResourceList{"pods": q("3")}},
		{Name: "objects", Hard: corev1.ResourceList{"count/pods": q("4")}},
		{Name: "cpu", Hard: corev1.ResourceList{"cpu": q("2")}},
		{Name: "compute", Hard: corev1.ResourceList{"requests.cpu": q("3"), "limits.cpu": q("2"), "requests.memory": q("2Gi"), "limits.memory": q("4Gi")}},
		{Name: "memory-only", Hard: corev1.ResourceList{"memory": q("1Gi")}},
		{Name: "storage", Hard: corev1.ResourceList{"requests.ephemeral-storage": q("1Gi"), "requests.example.com/gpu": q("0"), "hugepages-2Mi": q("2Mi")}},
		{Name: "best-effort", Hard: corev1.ResourceList{"pods": q("1")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
		{Name: "not-terminating", Hard: corev1.ResourceList{"pods": q("2")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort}},
		{Name: "high", Hard: corev1.ResourceList{"pods": q("0")}, ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}},
		{Name: "not-high", Hard: corev1.ResourceList{"pods": q("1")}, ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpNotIn, Values: []string{"high"}}}}},
	}
	helds := map[string][]string{"none": nil, "two bare": {"bare", "bare"}, "some": {"requests+limits", "two containers", "succeeded", "stuck terminating"},
		"heavy": {"init and sidecar", "pod-level", "hugepages and a device"}}
	evaluator := core.NewPodEvaluator(nil, clocktesting.NewFakeClock(now))
	cases := 0
	for heldName, names := range helds {
		var held []*corev1.Pod
		for _, n := range names {
			held = append(held, pods[n])
		}
		for _, qt := range quotas {
			rq := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: qt.Name, Namespace: "shop"},
				Spec:   corev1.ResourceQuotaSpec{Hard: qt.Hard, Scopes: qt.Scopes, ScopeSelector: qt.ScopeSelector},
				Status: corev1.ResourceQuotaStatus{Hard: qt.Hard, Used: corev1.ResourceList{}}}
			for name := range qt.Hard {
				rq.Status.Used[name] = resource.MustParse("0")
			}
			for _, h := range held {
				if ok, err := evaluator.Matches(&rq, h); err != nil || !ok {
					continue
				}
				u, err := evaluator.Usage(h)
				if err != nil {
					t.Fatal(err)
				}
				rq.Status.Used = quota.Add(rq.Status.Used, quota.Mask(u, quota.ResourceNames(qt.Hard)))
			}
			for podName, p := range pods {
				cases++
				internal := &api.Pod{}
				if err := upstreamcore.Convert_v1_Pod_To_core_Pod(p, internal, nil); err != nil {
					t.Fatal(err)
				}
				attrs := admission.NewAttributesRecord(internal, nil, api.Kind("Pod").WithVersion("v1"), "shop", p.Name,
					api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
				_, upErr := resourcequota.CheckRequest([]corev1.ResourceQuota{rq}, attrs, evaluator, nil)
				ourErr := planner.AdmitPod([]planner.Quota{qt}, p, held, now)
				if fmt.Sprint(upErr) != fmt.Sprint(ourErr) {
					t.Errorf("quota %s, held %s, pod %s: AdmitPod = %v; upstream %v", qt.Name, heldName, podName, ourErr, upErr)
				}
			}
		}
	}
	t.Logf("%d admissions compared", cases)
}

// TestApplyLimitRangesMatchesUpstream: planner.ApplyLimitRanges sets the
// requests, limits and annotation kube-apiserver's LimitRanger admission
// (PodMutateLimitFunc, after the API's pod defaulting) sets.
func TestApplyLimitRangesMatchesUpstream(t *testing.T) {
	q := resource.MustParse
	ranges := map[string][]corev1.LimitRange{
		"defaults": {{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{"cpu": q("1"), "memory": q("256Mi")}, DefaultRequest: corev1.ResourceList{"cpu": q("200m")}}}}}},
		"max only": {{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": q("2")}}}}}},
		"min only": {{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"memory": q("16Mi")}}}}}},
		"two ranges": {
			{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{"cpu": q("1")}}}}},
			{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": q("4")}},
				{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{"cpu": q("3"), "memory": q("1Gi")}}}}}},
	}
	for rname, rs := range ranges {
		for pname, p := range quotaPods(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
			stored := make([]corev1.LimitRange, len(rs))
			for i := range rs {
				stored[i] = *rs[i].DeepCopy()
				upstreamcore.SetObjectDefaults_LimitRange(&stored[i]) // as the API server stores it
			}
			theirs := p.DeepCopy()
			upstreamcore.SetObjectDefaults_Pod(theirs)
			internal := &api.Pod{}
			if err := upstreamcore.Convert_v1_Pod_To_core_Pod(theirs, internal, nil); err != nil {
				t.Fatal(err)
			}
			for i := range stored {
				if err := limitranger.PodMutateLimitFunc(&stored[i], internal); err != nil {
					t.Fatal(err)
				}
			}
			want := &corev1.Pod{}
			if err := upstreamcore.Convert_core_Pod_To_v1_Pod(internal, want, nil); err != nil {
				t.Fatal(err)
			}
			ours := p.DeepCopy()
			planner.ApplyLimitRanges(ours, rs)
			type res struct {
				Containers, Init []corev1.ResourceRequirements
				Annotation       string
			}
			pick := func(p *corev1.Pod) res {
				var r res
				for _, c := range p.Spec.Containers {
					r.Containers = append(r.Containers, c.Resources)
				}
				for _, c := range p.Spec.InitContainers {
					r.Init = append(r.Init, c.Resources)
				}
				r.Annotation = p.Annotations[planner.LimitRangeAnnotation]
				return r
			}
			if diff := cmp.Diff(pick(want), pick(ours), cmpopts.EquateEmpty(), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("ranges %s, pod %s: ApplyLimitRanges differs from LimitRanger (-upstream +ours):\n%s", rname, pname, diff)
			}
		}
	}
}
