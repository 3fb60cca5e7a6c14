//go:build e2e

package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// sideClients returns the typed and dynamic clients of side s, with the
// namespaces created on it.
func sideClients(t *testing.T, s side, namespaces ...string) (*kubernetes.Clientset, *dynamic.DynamicClient) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	return cs, dc
}

// stepLog holds the outcomes of the same named steps run on each side,
// in the order of the sides.
type stepLog struct {
	names   []string // the sides, kube-apiserver first
	steps   []string // the step names, as the first side ran them
	results map[string][]crOutcome
}

// side starts the steps of side name and returns the function that
// records each step's outcome on it.
func (l *stepLog) side(name string) func(step string, o crOutcome) {
	l.names = append(l.names, name)
	if l.results == nil {
		l.results = map[string][]crOutcome{}
	}
	first := len(l.names) == 1
	return func(step string, o crOutcome) {
		if first {
			l.steps = append(l.steps, step)
		}
		l.results[name] = append(l.results[name], o)
	}
}

// compare fails t for each step whose outcomes differ between the first
// two sides, and logs the table of every step under title.
func (l *stepLog) compare(t *testing.T, title string) {
	t.Helper()
	compareSteps(t, title, l.steps, l.results[l.names[0]], l.results[l.names[1]])
}
