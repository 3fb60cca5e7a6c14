package envtest_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/envtest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The latency each request was given, as the trace tells it.
func latencies(t *testing.T, env *envtest.Environment) []string {
	t.Helper()
	var got []string
	for _, line := range env.Trace() {
		if !strings.Contains(line, "configmaps default/x") || !strings.Contains(line, " request ") {
			continue
		}
		verb := strings.Fields(line[strings.Index(line, " request ")+len(" request "):])[0]
		lat := "none"
		if i := strings.Index(line, "(injected latency "); i >= 0 {
			lat = strings.TrimSuffix(strings.Fields(line[i+len("(injected latency "):])[0], ")")
		}
		got = append(got, verb+" "+lat)
	}
	return got
}

func TestLatency(t *testing.T) {
	for _, tt := range []struct {
		name    string
		latency *envtest.Latency
		faults  memcluster.Faults // set after Start
		want    []string
	}{
		{name: "kube-apiserver's by default", want: []string{"POST 2ms", "GET 1ms", "PUT 2ms", "DELETE 2ms"}},
		{name: "none", latency: &envtest.Latency{}, want: []string{"POST none", "GET none", "PUT none", "DELETE none"}},
		{name: "reads only", latency: &envtest.Latency{Read: 3 * time.Millisecond}, want: []string{"POST none", "GET 3ms", "PUT none", "DELETE none"}},
		{name: "kept with faults set later", faults: memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "get", Latency: time.Millisecond}}},
			want: []string{"POST 2ms", "GET 2ms", "PUT 2ms", "DELETE 2ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := &envtest.Environment{Latency: tt.latency}
			c := start(t, env)
			if err := env.SetFaults(tt.faults); err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
			if err := c.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
				t.Fatal(err)
			}
			cm.Data = map[string]string{"a": "b"}
			if err := c.Update(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, latencies(t, env)); diff != "" {
				t.Errorf("latencies mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := (&envtest.Environment{Latency: &envtest.Latency{Write: -time.Second}}).Start(); err == nil {
		t.Error("Start with a negative latency: no error")
	}
}

// TestListCatchUp checks the default Latency's ListCatchUp, in virtual
// time (a synctest bubble): a list of secrets right after a configmap is
// written waits for the secrets' watch cache, 95 ms after the write; a list
// of configmaps, or one at resourceVersion "0", takes the read latency.
func TestListCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := &envtest.Environment{}
		c := start(t, env)
		took := func(list client.ObjectList, opts ...client.ListOption) time.Duration {
			t.Helper()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-", Namespace: "default"}}
			if err := c.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			if err := c.List(t.Context(), list, opts...); err != nil {
				t.Fatal(err)
			}
			return time.Since(begin)
		}
		for _, tt := range []struct {
			name string
			list client.ObjectList
			opts []client.ListOption
			want time.Duration
		}{
			{name: "another kind", list: &corev1.SecretList{}, want: 95 * time.Millisecond},
			{name: "the kind written", list: &corev1.ConfigMapList{}, want: time.Millisecond},
			{name: "another kind at resourceVersion 0", list: &corev1.SecretList{},
				opts: []client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}}, want: time.Millisecond},
		} {
			if got := took(tt.list, tt.opts...); got != tt.want {
				t.Errorf("a list of %s right after a write of configmaps took %v; want %v", tt.name, got, tt.want)
			}
		}
	})
}

// A pod deleted at once (unbound) is written twice, as kube-apiserver
// writes it: its deletionTimestamp, then its removal, the write latency
// apart. For those 2 ms the pod is there being deleted, so a controller
// that reacts to the MODIFIED event finds it (lws restarts a pod's group
// then); the Delete returns after both writes. In a bubble, so that the
// times are exact.
func TestLatencyApartTheTwoWritesOfADeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := &envtest.Environment{}
		c := start(t, env)
		wc, err := client.NewWithWatch(env.Config, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		if err := c.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		w, err := wc.Watch(t.Context(), &corev1.PodList{}, client.InNamespace("default"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pod.ResourceVersion}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		begin := time.Now()
		returned := make(chan time.Duration, 1)
		go func() {
			if err := c.Delete(t.Context(), pod); err != nil {
				t.Error(err)
			}
			returned <- time.Since(begin)
		}()
		var got []string
		for ev := range w.ResultChan() {
			p := ev.Object.(*corev1.Pod)
			line := fmt.Sprintf("+%v %s deleting=%t", time.Since(begin), ev.Type, p.DeletionTimestamp != nil)
			if ev.Type == watch.Modified {
				// What the controller's reaction reads (1 ms later).
				err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &corev1.Pod{})
				line += fmt.Sprintf(", then a get at +%v: %v", time.Since(begin), err)
			}
			got = append(got, line)
			if ev.Type == watch.Deleted {
				break
			}
		}
		got = append(got, fmt.Sprintf("the Delete returned at +%v", <-returned))
		want := []string{
			"+2ms MODIFIED deleting=true, then a get at +3ms: <nil>",
			"+4ms DELETED deleting=true",
			"the Delete returned at +4ms",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the deletion mismatch (-want +got):\n%s", diff)
		}
	})
}
