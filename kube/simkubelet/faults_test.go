package simkubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParseFault(t *testing.T) {
	for _, f := range append([]Fault{Healthy}, Faults...) {
		got, err := ParseFault(string(f))
		if err != nil || got != f {
			t.Errorf("ParseFault(%q) = %q, %v", f, got, err)
		}
	}
	if got, err := ParseFault("outofcpu"); err != nil || got != OutOfCPU {
		t.Errorf("ParseFault(outofcpu) = %q, %v", got, err)
	}
	if _, err := ParseFault("Sneeze"); err == nil || !strings.Contains(err.Error(), `unknown fault "Sneeze" (one of Healthy, ImagePull, `) {
		t.Errorf("ParseFault(Sneeze) error = %v", err)
	}
}

// start stores the pod and has a FaultKubelet with fault start it, as Run
// does for a new pod (Run's watch loop is exercised by the e2e suites).
func start(t *testing.T, fault Fault, p *corev1.Pod, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset(append(objs, p)...)
	k := &FaultKubelet{Client: cs, Namespace: "shop", ReadyDelay: time.Millisecond}
	k.start(context.Background(), p, p.Spec.NodeName, fault) // as Run does for a pod with a node set
	return cs
}

func pod(name string, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node-7", Containers: []corev1.Container{{Name: "app", Image: "app:2"}}}}
	if edit != nil {
		edit(p)
	}
	return p
}

func events(cs *fake.Clientset) []corev1.Event {
	l, _ := cs.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	return l.Items
}

func get(cs *fake.Clientset, name string) *corev1.Pod {
	p, _ := cs.CoreV1().Pods("shop").Get(context.Background(), name, metav1.GetOptions{})
	return p
}

// TestRejection: a rejected pod is Failed with the kubelet's reason and
// message, and the kubelet's event says the same.
func TestRejection(t *testing.T) {
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	cs := start(t, OutOfCPU, pod("web-1", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = cpu }))
	if n := len(events(cs)); n != 1 {
		t.Fatalf("%d events; want 1", n)
	}
	p, ev := get(cs, "web-1"), events(cs)[0]
	const msg = "Node didn't have enough resource: cpu, requested: 2000, used: 4000, capacity: 4000"
	if p.Status.Reason != "OutOfcpu" || p.Status.Message != "Pod was rejected: "+msg || p.Spec.NodeName != "node-7" {
		t.Errorf("status %+v on %s", p.Status, p.Spec.NodeName)
	}
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "OutOfcpu" || ev.Message != msg || ev.Source.Component != "kubelet" ||
		ev.Source.Host != "node-7" || ev.InvolvedObject.Name != "web-1" {
		t.Errorf("event %+v", ev)
	}
}

// TestPrivateImage: without the pull secret the pod waits ImagePullBackOff
// and the kubelet says the secret is missing; with it, the pod runs.
func TestPrivateImage(t *testing.T) {
	withSecret := func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}} }
	cs := start(t, PrivateImage, pod("web-1", withSecret))
	if n := len(events(cs)); n != 1 {
		t.Fatalf("%d events; want 1", n)
	}
	p, ev := get(cs, "web-1"), events(cs)[0]
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ImagePullBackOff" || !strings.Contains(w.Message, "pull access denied") {
		t.Errorf("container status %+v", p.Status.ContainerStatuses[0])
	}
	if ev.Reason != "FailedToRetrieveImagePullSecret" ||
		ev.Message != "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed." {
		t.Errorf("event %+v", ev)
	}

	cs = start(t, PrivateImage, pod("web-2", withSecret), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"}})
	p = get(cs, "web-2")
	if n := len(events(cs)); n != 0 || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
		t.Errorf("with the secret: %d events, status %+v; want none and Ready", n, p.Status)
	}
}
