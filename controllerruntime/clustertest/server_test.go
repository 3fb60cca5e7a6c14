package clustertest_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

func TestServerRefusesVirtualTimeOptions(t *testing.T) {
	for name, opts := range map[string]clustertest.Options{
		"interleave": {Interleave: true},
		"schedule":   {Schedule: "1:0"},
		"perturb":    {Perturb: clustertest.PerturbLag},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := clustertest.NewServer(opts)
			if err == nil {
				_ = s.Stop()
				t.Fatal("NewServer: no error")
			}
			if !strings.Contains(err.Error(), "wall clock") {
				t.Errorf("NewServer: %v, want an error that says a Server runs on the wall clock", err)
			}
		})
	}
}

func TestServerServesAndStops(t *testing.T) {
	s, err := clustertest.NewServer(clustertest.Options{Disable: clustertest.AllControllers})
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(s.Config())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	// What happened stays readable after Stop.
	if tr := strings.Join(s.Trace(), "\n"); !strings.Contains(tr, "request POST configmaps default/x from config") {
		t.Errorf("the trace after Stop lacks the create:\n%s", tr)
	}
	if d := s.Describe(); !strings.Contains(d, "last write stored at") {
		t.Errorf("Describe after Stop:\n%s", d)
	}
}
