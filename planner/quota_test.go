package planner_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/planner"
)

// list builds a ResourceList from name, amount pairs.
func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// amounts renders a ResourceList as name → amount strings, for cmp.
func amounts(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "app:1", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func podOf(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-abc-", Namespace: "default"}, Spec: corev1.PodSpec{Containers: cs}}
}

func TestPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	deleted := metav1.NewTime(t0.Add(-10 * time.Second))
	tests := []struct {
		name string
		pod  func() *corev1.Pod
		want map[string]string
	}{
		{"no resources", func() *corev1.Pod { return podOf(container("app", nil, nil)) },
			map[string]string{"count/pods": "1", "pods": "1"}},
		{"requests and limits, under every name a quota may use", func() *corev1.Pod {
			return podOf(container("app", list("cpu", "250m", "memory", "64Mi"), list("cpu", "1", "memory", "128Mi")))
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "250m", "requests.cpu": "250m", "limits.cpu": "1",
			"memory": "64Mi", "requests.memory": "64Mi", "limits.memory": "128Mi"}},
		{"containers add up; an init container alone, the larger wins", func() *corev1.Pod {
			p := podOf(container("a", list("cpu", "100m"), nil), container("b", list("cpu", "200m"), nil))
			p.Spec.InitContainers = []corev1.Container{container("init", list("cpu", "500m", "memory", "1Gi"), nil)}
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "500m", "requests.cpu": "500m", "memory": "1Gi", "requests.memory": "1Gi"}},
		{"a sidecar adds to the app containers and to later init containers", func() *corev1.Pod {
			p := podOf(container("app", list("cpu", "100m"), nil))
			side := container("proxy", list("cpu", "100m"), nil)
			side.RestartPolicy = &always
			p.Spec.InitContainers = []corev1.Container{side, container("migrate", list("cpu", "150m"), nil)}
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "250m", "requests.cpu": "250m"}},
		{"pod-level resources and overhead", func() *corev1.Pod {
			p := podOf(container("app", list("cpu", "100m"), list("cpu", "200m")))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "1"), Limits: list("cpu", "2")}
			p.Spec.Overhead = list("cpu", "10m")
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "1010m", "requests.cpu": "1010m", "limits.cpu": "2010m"}},
		{"hugepages, extended resources", func() *corev1.Pod {
			return podOf(container("app", list("hugepages-2Mi", "4Mi", "example.com/gpu", "1"), nil))
		}, map[string]string{"count/pods": "1", "pods": "1", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi", "requests.example.com/gpu": "1"}},
		{"finished: only the object counts", func() *corev1.Pod {
			p := podOf(container("app", list("cpu", "1"), nil))
			p.Status.Phase = corev1.PodSucceeded
			return p
		}, map[string]string{"count/pods": "1"}},
		{"terminating within its grace period: charged", func() *corev1.Pod {
			p := podOf(container("app", list("cpu", "1"), nil))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleted, ptr[int64](30)
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"terminating past its deletion timestamp plus grace period: not charged", func() *corev1.Pod {
			p := podOf(container("app", list("cpu", "1"), nil))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleted, ptr[int64](5)
			return p
		}, map[string]string{"count/pods": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod()
			before := p.DeepCopy()
			if diff := cmp.Diff(tt.want, amounts(planner.PodUsage(p, t0))); diff != "" {
				t.Errorf("PodUsage mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, p); diff != "" {
				t.Errorf("PodUsage modified the pod:\n%s", diff)
			}
		})
	}
}

func TestAdmitPod(t *testing.T) {
	small := func() *corev1.Pod {
		return podOf(container("app", list("cpu", "500m", "memory", "64Mi"), list("cpu", "1")))
	}
	bare := func() *corev1.Pod { return podOf(container("app", nil, nil)) }
	held := func(n int, mk func() *corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for range n {
			out = append(out, mk())
		}
		return out
	}
	quota := func(name string, kv ...string) planner.Quota { return planner.Quota{Name: name, Hard: list(kv...)} }
	tests := []struct {
		name   string
		quotas []planner.Quota
		pod    *corev1.Pod
		held   []*corev1.Pod
		want   string // the error's message; "" admits
	}{
		{"room left", []planner.Quota{quota("pods", "pods", "4")}, bare(), held(3, bare), ""},
		{"pods full", []planner.Quota{quota("pods", "pods", "4")}, bare(), held(4, bare),
			`pods "web-abc-" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4`},
		{"count/pods counts finished pods, pods does not", []planner.Quota{quota("objects", "count/pods", "2"), quota("live", "pods", "2")}, bare(),
			append(held(1, bare), func() *corev1.Pod { p := bare(); p.Status.Phase = corev1.PodFailed; return p }()),
			`pods "web-abc-" is forbidden: exceeded quota: objects, requested: count/pods=1, used: count/pods=2, limited: count/pods=2`},
		{"cpu is requests.cpu", []planner.Quota{quota("compute", "cpu", "1")}, small(), held(2, small),
			`pods "web-abc-" is forbidden: exceeded quota: compute, requested: cpu=500m, used: cpu=1, limited: cpu=1`},
		{"several resources over, sorted", []planner.Quota{quota("compute", "requests.cpu", "1", "limits.cpu", "2", "requests.memory", "1Gi")}, small(), held(2, small),
			`pods "web-abc-" is forbidden: exceeded quota: compute, requested: limits.cpu=1,requests.cpu=500m, used: limits.cpu=2,requests.cpu=1, limited: limits.cpu=2,requests.cpu=1`},
		{"a quota on cpu wants every container to set it", []planner.Quota{quota("compute", "limits.memory", "1Gi", "requests.cpu", "2")}, bare(), nil,
			`pods "web-abc-" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app`},
		{"the first quota that refuses is named", []planner.Quota{quota("a", "pods", "10"), quota("b", "pods", "1"), quota("c", "pods", "1")}, bare(), held(1, bare),
			`pods "web-abc-" is forbidden: exceeded quota: b, requested: pods=1, used: pods=1, limited: pods=1`},
		{"a quota on other kinds does not count pods", []planner.Quota{quota("svc", "services", "0", "count/deployments.apps", "0")}, bare(), held(5, bare), ""},
		{"scope BestEffort counts only best-effort pods", []planner.Quota{{Name: "be", Hard: list("pods", "1"),
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}, small(), held(3, bare), ""},
		{"scope BestEffort, a best-effort pod", []planner.Quota{{Name: "be", Hard: list("pods", "1"),
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}, bare(), append(held(1, bare), held(3, small)...),
			`pods "web-abc-" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1`},
		{"priority class selector", []planner.Quota{{Name: "high", Hard: list("pods", "0"), ScopeSelector: &corev1.ScopeSelector{
			MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}}}, bare(), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := planner.AdmitPod(tt.quotas, tt.pod, tt.held, t0)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("AdmitPod = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestApplyLimitRanges(t *testing.T) {
	item := func(def, defReq, maxL corev1.ResourceList) corev1.LimitRange {
		return corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: list("cpu", "8")}, // not a container item: no defaults
			{Type: corev1.LimitTypeContainer, Default: def, DefaultRequest: defReq, Max: maxL}}}}
	}
	type want struct {
		Requests, Limits map[string]string
		Annotation       string
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		ranges []corev1.LimitRange
		want   want
	}{
		{"defaults fill what the container lacks", podOf(container("app", list("memory", "32Mi"), nil)),
			[]corev1.LimitRange{item(list("cpu", "1", "memory", "256Mi"), list("cpu", "200m", "memory", "128Mi"), nil)},
			want{map[string]string{"cpu": "200m", "memory": "32Mi"}, map[string]string{"cpu": "1", "memory": "256Mi"},
				"LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app"}},
		{"a limit without a request becomes the request first", podOf(container("app", nil, list("cpu", "2"))),
			[]corev1.LimitRange{item(list("cpu", "1"), list("cpu", "100m"), nil)},
			want{map[string]string{"cpu": "2"}, map[string]string{"cpu": "2"}, ""}},
		{"default from max, default request from default", podOf(container("app", nil, nil)),
			[]corev1.LimitRange{item(nil, nil, list("cpu", "500m"))},
			want{map[string]string{"cpu": "500m"}, map[string]string{"cpu": "500m"},
				"LimitRanger plugin set: cpu request for container app; cpu limit for container app"}},
		{"an earlier range wins", podOf(container("app", nil, nil)),
			[]corev1.LimitRange{item(list("cpu", "1"), nil, nil), item(list("cpu", "3", "memory", "1Gi"), nil, nil)},
			want{map[string]string{"cpu": "1", "memory": "1Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"},
				"LimitRanger plugin set: memory request for container app; memory limit for container app"}},
		{"no range: only the API defaulting", podOf(container("app", nil, list("memory", "1Gi"))), nil,
			want{map[string]string{"memory": "1Gi"}, map[string]string{"memory": "1Gi"}, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planner.ApplyLimitRanges(tt.pod, tt.ranges)
			c := tt.pod.Spec.Containers[0]
			got := want{amounts(c.Resources.Requests), amounts(c.Resources.Limits), tt.pod.Annotations[planner.LimitRangeAnnotation]}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ApplyLimitRanges mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
