package informer_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pod builds a test pod "ns/name" with the given options applied.
func pod(ns, name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func labeled(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func ownedBy(uid types.UID) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller", UID: "other"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + string(uid), UID: uid, Controller: new(true)},
		}
	}
}

func version(rv string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.ResourceVersion = rv }
}

// keys returns the sorted "ns/name" of pods, for order-insensitive checks.
func keys(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	slices.Sort(out)
	return out
}

func nn(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func mustAdd[T interface{ Add(*corev1.Pod) error }](t *testing.T, c T, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := c.Add(p); err != nil {
			t.Fatalf("Add(%s/%s) = %v; want nil", p.Namespace, p.Name, err)
		}
	}
}
