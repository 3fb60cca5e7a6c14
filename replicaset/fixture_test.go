package replicaset_test

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const ns = "default"

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// newRS returns a ReplicaSet "name" selecting app=name, at generation 1
// with a matching observed status of 0 pods.
func newRS(name string, replicas int32, mods ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	l := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("rs-" + name), Generation: 1,
			Labels: map[string]string{"app": name},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, TerminatingReplicas: new(int32)},
	}
	for _, m := range mods {
		m(rs)
	}
	return rs
}

// podOpt modifies a pod fixture.
type podOpt func(*corev1.Pod)

// newPod returns a pod "name" labelled app=web, Running, not ready, not
// scheduled, created an hour before t0, owned by nobody.
func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels:            map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, *replicaset.NewControllerRef(rs))
		p.Labels = map[string]string{}
		for k, v := range rs.Spec.Template.Labels {
			p.Labels[k] = v
		}
	}
}

func withLabels(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }
func onNode(n string) podOpt                { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func inPhase(ph corev1.PodPhase) podOpt     { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func createdAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}
func withUID(u string) podOpt { return func(p *corev1.Pod) { p.UID = types.UID(u) } }

func readySince(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t),
		})
	}
}

func notReady() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

func withCost(v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[replicaset.PodDeletionCostAnnotation] = v
	}
}

func withRestarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c", RestartCount: n})
	}
}

func withSidecarRestarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers,
			corev1.Container{Name: "side", RestartPolicy: &always}, corev1.Container{Name: "init"})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses,
			corev1.ContainerStatus{Name: "side", RestartCount: n}, corev1.ContainerStatus{Name: "init", RestartCount: 100})
	}
}

func deletingAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { mt := metav1.NewTime(t); p.DeletionTimestamp = &mt }
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
