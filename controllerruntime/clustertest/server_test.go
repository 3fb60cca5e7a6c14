package clustertest_test

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

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
			if !strings.Contains(err.Error(), "does not explore orderings") {
				t.Errorf("NewServer: %v, want an error that says a Server does not explore orderings", err)
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

// TestServerInABubbleRunsOnItsClock starts a Server inside a synctest
// bubble, as envtest.RunSpecs does: it answers on the bubble's virtual
// clock, each request of a resource after Options.RequestLatency
// (discovery at once), one step at a time, so that the same requests make
// the same trace.
func TestServerInABubbleRunsOnItsClock(t *testing.T) {
	var traces [2][]string
	for i := range traces {
		synctest.Test(t, func(t *testing.T) {
			s, err := clustertest.NewServer(clustertest.Options{Disable: clustertest.AllControllers, RequestLatency: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			kube := kubernetes.NewForConfigOrDie(s.Config())
			begin := time.Now()
			if _, err := kube.Discovery().ServerGroups(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(begin); d != 0 {
				t.Errorf("discovery took %v of virtual time; want none", d)
			}
			var wg sync.WaitGroup
			for _, name := range []string{"b", "a", "c"} {
				wg.Go(func() {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
					if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if d := time.Since(begin); d != time.Second {
				t.Errorf("three creates at once took %v of virtual time; want the latency, 1s", d)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			traces[i] = s.Trace()
		})
	}
	if diff := cmp.Diff(traces[0], traces[1]); diff != "" {
		t.Errorf("the same requests in a bubble made different traces (-first +second):\n%s", diff)
	}
	if tr := strings.Join(traces[0], "\n"); !strings.Contains(tr, "+1s request POST configmaps default/a from config") {
		t.Errorf("the trace does not have the create of a at +1s:\n%s", tr)
	}
}

func TestNegativeRequestLatencyIsRefused(t *testing.T) {
	s, err := clustertest.NewServer(clustertest.Options{RequestLatency: -time.Second})
	if err == nil {
		_ = s.Stop()
		t.Fatal("NewServer: no error")
	}
	if !strings.Contains(err.Error(), "negative Options.RequestLatency -1s") {
		t.Errorf("NewServer: %v; want an error naming the negative latency", err)
	}
}
