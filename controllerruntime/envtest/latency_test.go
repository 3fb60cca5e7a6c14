package envtest_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
