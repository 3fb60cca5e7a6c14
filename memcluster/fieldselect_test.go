package memcluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func names[T Object](items []T) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.GetName())
	}
	return out
}

func TestFieldSelectors(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	ctx := ctxT(t)
	for i, name := range []string{"a", "b", "c"} {
		p := pod(name, "", "")
		if i > 0 {
			p.Spec.NodeName = "node-1"
		}
		must(c.Pods("ns").Create(ctx, p, metav1.CreateOptions{}))(t)
	}
	b := must(c.Pods("ns").Get(ctx, "b", metav1.GetOptions{}))(t)
	b.Status.Phase = corev1.PodRunning
	b.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}}
	must(c.Pods("ns").UpdateStatus(ctx, b, metav1.UpdateOptions{}))(t)
	events := kindClient[*corev1.Event](c, schema.GroupKind{Kind: "Event"}, "ns")
	must(events.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "a"},
		Reason: "Started", Type: "Normal", Source: corev1.EventSource{Component: "kubelet"}}, metav1.CreateOptions{}))(t)
	must(events.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "b"},
		Reason: "Killing", Type: "Warning", ReportingController: "ctrl"}, metav1.CreateOptions{}))(t)
	newEvents := kindClient[*eventsv1.Event](c, schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "ns")
	must(newEvents.Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Regarding: corev1.ObjectReference{Kind: "Pod", Name: "c"},
		Reason: "Scheduled", Type: "Normal", ReportingController: "sched", Action: "Binding", EventTime: metav1.NewMicroTime(t0)}, metav1.CreateOptions{}))(t)
	secrets := kindClient[*corev1.Secret](c, schema.GroupKind{Kind: "Secret"}, "ns")
	must(secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}}, metav1.CreateOptions{}))(t)
	must(secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}, metav1.CreateOptions{}))(t)

	list := func(items []string, err error) func(t *testing.T) []string {
		return must(items, err)
	}
	podsBy := func(sel string) ([]string, error) {
		items, _, err := c.Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		return names(items), err
	}
	eventsBy := func(sel string) ([]string, error) {
		items, _, err := events.List(ctx, metav1.ListOptions{FieldSelector: sel})
		return names(items), err
	}
	tests := []struct {
		name string
		got  func(t *testing.T) []string
		want []string
	}{
		{"pods by node", list(podsBy("spec.nodeName=node-1")), []string{"b", "c"}},
		{"unscheduled pods", list(podsBy("spec.nodeName=")), []string{"a"}},
		{"pods by phase", list(podsBy("status.phase!=Pending")), []string{"b"}},
		{"pods by IP", list(podsBy("status.podIP=10.0.0.5")), []string{"b"}},
		{"the old name of spec.nodeName", list(podsBy("spec.host=node-1,metadata.name!=c")), []string{"b"}},
		{"pods by several fields", list(podsBy("spec.restartPolicy=Always,spec.schedulerName=default-scheduler,spec.hostNetwork=false,metadata.namespace=ns")), []string{"a", "b", "c"}},
		{"events by involved object", list(eventsBy("involvedObject.name=a,involvedObject.kind=Pod")), []string{"e1"}},
		{"events by source, or reporting component without one", list(eventsBy("source=ctrl")), []string{"e2"}},
		{"events by type and reason", list(eventsBy("type=Warning,reason=Killing,reportingComponent=ctrl")), []string{"e2"}},
		{"events.k8s.io events by regarding", list(func() ([]string, error) {
			items, _, err := newEvents.List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=c,reportingController=sched"})
			return names(items), err
		}()), []string{"n1"}},
		{"secrets by type", list(func() ([]string, error) {
			items, _, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
			return names(items), err
		}()), []string{"tls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got(t)); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldSelectorsRefused(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	addWidgets(t, c)
	ctx := ctxT(t)
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	nodes := NewResource(c, must(KindFor(s, &corev1.Node{}, KindOptions{ClusterScoped: true}))(t)).Namespace("")
	widgets := c.kinds[schema.GroupKind{Group: "example.com", Kind: "Widget"}].(*Resource[*widget]).Namespace("ns")
	events := kindClient[*eventsv1.Event](c, schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "ns")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"deployments: the default conversion", listErr(c.Deployments("ns").List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"})),
			`"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"replica sets of apps/v1 have no status.replicas", listErr(c.ReplicaSets("ns").List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=1"})),
			`"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"pods", listErr(c.Pods("ns").List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=1"})), "field label not supported: spec.nope"},
		{"nodes have no namespace", listErr(nodes.List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=x"})), "field label not supported: metadata.namespace"},
		{"events.k8s.io speaks of regarding, not involvedObject", listErr(events.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=x"})),
			"field label not supported: involvedObject.name"},
		{"custom resources", listErr(widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.size=1"})), "field label not supported: spec.size"},
		{"watches too", watchErr(c.Pods("ns").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nope=1"})), "field label not supported: spec.nope"},
	}
	for _, tt := range tests {
		if !apierrors.IsBadRequest(tt.err) || tt.err.Error() != tt.want {
			t.Errorf("%s: %v; want BadRequest %q", tt.name, tt.err, tt.want)
		}
	}
	if _, _, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=false"}); err != nil {
		t.Errorf("nodes by spec.unschedulable: %v", err)
	}
}

func listErr[T any](_ []T, _ string, err error) error { return err }

func watchErr[T any](_ T, err error) error { return err }

func TestSelectableFieldsHook(t *testing.T) {
	c, _ := newTestCluster(t)
	k := must(KindFor(widgetScheme(t), &widget{}, KindOptions{}))(t)
	k.SelectableFields = func(w *widget) fields.Set {
		return fields.Set{"metadata.name": w.Name, "metadata.namespace": w.Namespace, "spec.owner": w.Spec.Owner}
	}
	widgets := NewResource(c, k).Namespace("ns")
	for _, w := range []*widget{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: widgetSpec{Owner: "x"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}} {
		must(widgets.Create(ctxT(t), w, metav1.CreateOptions{}))(t)
	}
	items, _, err := widgets.List(ctxT(t), metav1.ListOptions{FieldSelector: "spec.owner=x"})
	if err != nil || !cmp.Equal(names(items), []string{"a"}) {
		t.Errorf("List by spec.owner = %v, %v; want [a]", names(items), err)
	}
	if _, _, err := widgets.List(ctxT(t), metav1.ListOptions{FieldSelector: "spec.size=1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("List by a field the hook does not return: %v; want BadRequest", err)
	}
}

func TestWatchWithFieldSelector(t *testing.T) {
	c, fc := newTestCluster(t)
	ctx := ctxT(t)
	w := must(c.Pods("ns").Watch(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"}))(t)
	defer w.Stop()
	p := must(c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}))(t)
	p.Status.Phase = corev1.PodRunning
	p = must(c.Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}))(t)
	p.Status.Phase = corev1.PodSucceeded
	must(c.Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}))(t)
	fc.Step(time.Second)
	// Pending is not selected: the pod enters the watch when it runs, and
	// leaves it when it succeeds.
	if diff := cmp.Diff([]string{"ADDED p", "DELETED p"}, nextN(t, fc, w, 2)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestREST_FieldSelectors(t *testing.T) {
	c, _ := newTestCluster(t)
	rc := newRESTClient(t, c)
	p := pod("p", "", "")
	p.Spec.NodeName = "n"
	must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
	must(c.Pods("ns").Create(ctxT(t), pod("q", "", ""), metav1.CreateOptions{}))(t)
	for path, want := range map[string]string{
		"/api/v1/pods?fieldSelector=spec.nodeName%3Dn":                    "200 PodList items=1",
		"/api/v1/namespaces/ns/pods?fieldSelector=status.phase%3DPending": "200 PodList items=2",
		"/api/v1/pods?fieldSelector=spec.nodeName%3Dn&watch=0":            "200 PodList items=1",
		"/api/v1/pods?fieldSelector=status.nope%3Dn":                      "400 Status BadRequest",
		"/apis/apps/v1/deployments?fieldSelector=status.replicas%3D1":     "400 Status BadRequest",
	} {
		resp, body := rc.do(req{method: "GET", path: path})
		if got := summary(resp.StatusCode, body); got != want {
			t.Errorf("GET %s = %s; want %s", path, got, want)
		}
	}
}
