package memcluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestKindForErrors(t *testing.T) {
	noList := runtime.NewScheme()
	noList.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	twice := widgetScheme(t)
	twice.AddKnownTypeWithName(schema.GroupVersion{Group: "example.com", Version: "v2"}.WithKind("Widget"), &widget{})
	twice.AddKnownTypeWithName(schema.GroupVersion{Group: "example.com", Version: "v2"}.WithKind("WidgetList"), &widgetList{})
	tests := []struct {
		name   string
		scheme *runtime.Scheme
		opts   KindOptions
		want   string
	}{
		{"not registered", runtime.NewScheme(), KindOptions{}, "no kind is registered"},
		{"no list type", noList, KindOptions{}, "the scheme has no WidgetList"},
		{"two kinds", twice, KindOptions{}, "registered as 2 kinds"},
		{"the wrong kind", widgetScheme(t), KindOptions{GVK: widgetGV.WithKind("Gadget")}, "is not registered as example.com/v1, Kind=Gadget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := KindFor(tt.scheme, &widget{}, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("KindFor() error = %v; want one containing %q", err, tt.want)
			}
		})
	}
	k, err := KindFor(twice, &widget{}, KindOptions{GVK: schema.GroupVersion{Group: "example.com", Version: "v2"}.WithKind("Widget"), Resource: "gizmos"})
	if err != nil || k.GVK.Version != "v2" || k.Resource != "gizmos" {
		t.Errorf("KindFor(v2, gizmos) = %v %q, %v", k.GVK, k.Resource, err)
	}
}

// A custom resource gets the semantics kube-apiserver gives CRDs.
func TestKindForCustomResource(t *testing.T) {
	c, _ := newTestCluster(t)
	widgets := addWidgets(t, c).Namespace("ns")
	ctx := ctxT(t)
	show := func(w *widget, err error) string {
		if err != nil {
			return "error: " + string(apierrors.ReasonForError(err))
		}
		return fmt.Sprintf("gen=%d rv=%s size=%d owner=%q ready=%t", w.Generation, w.ResourceVersion, w.Spec.Size, w.Spec.Owner, w.Status.Ready)
	}
	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: widgetSpec{Size: 1}, Status: widgetStatus{Ready: true}}
	var got []string
	created, err := widgets.Create(ctx, w, metav1.CreateOptions{})
	got = append(got, show(created, err)) // the status is reset
	up := created.DeepCopyObject().(*widget)
	up.Spec.Size, up.Status.Ready = 2, true
	updated, err := widgets.Update(ctx, up, metav1.UpdateOptions{})
	got = append(got, show(updated, err)) // the spec bumps the generation, the status is kept
	up = updated.DeepCopyObject().(*widget)
	up.Labels = map[string]string{"a": "b"}
	updated, err = widgets.Update(ctx, up, metav1.UpdateOptions{})
	got = append(got, show(updated, err)) // metadata does not bump it
	st := updated.DeepCopyObject().(*widget)
	st.Status.Ready, st.Spec.Size = true, 9
	updated, err = widgets.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	got = append(got, show(updated, err)) // a status write changes the status only
	noRV := updated.DeepCopyObject().(*widget)
	noRV.ResourceVersion, noRV.Spec.Size = "", 3
	got = append(got, show(widgets.Update(ctx, noRV, metav1.UpdateOptions{}))) // an update needs a resourceVersion
	got = append(got, show(widgets.Patch(ctx, "w", types.StrategicMergePatchType, []byte(`{"spec":{"size":4}}`), metav1.PatchOptions{})))
	got = append(got, show(widgets.Patch(ctx, "w", types.MergePatchType, []byte(`{"spec":{"owner":"me"}}`), metav1.PatchOptions{})))
	want := []string{
		"gen=1 rv=2 size=1 owner=\"\" ready=false",
		"gen=2 rv=3 size=2 owner=\"\" ready=false",
		"gen=2 rv=4 size=2 owner=\"\" ready=false",
		"gen=2 rv=5 size=2 owner=\"\" ready=true",
		"error: Invalid",
		"error: UnsupportedMediaType",
		"gen=3 rv=6 size=2 owner=\"me\" ready=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("widget writes mismatch (-want +got):\n%s", diff)
	}
	gen := must(widgets.Create(ctx, &widget{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-"}}, metav1.CreateOptions{}))(t)
	if !strings.HasPrefix(gen.Name, "w-") || len(gen.Name) != len("w-")+5 || gen.UID == "" || gen.UID == created.UID || gen.CreationTimestamp.IsZero() {
		t.Errorf("generated widget %q uid %q created %v; want w-<5 characters>, a new uid and a creation time", gen.Name, gen.UID, gen.CreationTimestamp)
	}
}

// Without a status subresource the status is part of the object: updates
// write it (and bump the generation), status writes are not supported.
func TestKindForNoStatusSubresource(t *testing.T) {
	c, _ := newTestCluster(t)
	k, err := KindFor(widgetScheme(t), &widget{}, KindOptions{NoStatusSubresource: true, ClusterScoped: true})
	if err != nil {
		t.Fatal(err)
	}
	widgets := NewResource(c, k).Namespace("")
	w := must(widgets.Create(ctxT(t), &widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ignored"}, Status: widgetStatus{Ready: true}}, metav1.CreateOptions{}))(t)
	if !w.Status.Ready || w.Namespace != "" {
		t.Errorf("created %+v; want the status kept and no namespace", w)
	}
	w.Status.Ready = false
	w = must(widgets.Update(ctxT(t), w, metav1.UpdateOptions{}))(t)
	if w.Status.Ready || w.Generation != 2 {
		t.Errorf("updated status ready=%t generation=%d; want false and 2", w.Status.Ready, w.Generation)
	}
	if _, err := widgets.UpdateStatus(ctxT(t), w, metav1.UpdateOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("UpdateStatus() error = %v; want MethodNotSupported", err)
	}
}

// Owner references work across kinds: a widget owns a ConfigMap, and a
// type-erased Resource[Object] stores widgets as well as a typed one.
func TestKindForGarbageCollection(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	k, err := KindFor[Object](widgetScheme(t), &widget{}, KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widgets := NewResource(c, k).Namespace("ns")
	owner := must(widgets.Create(ctxT(t), &widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}))(t)
	rc := newRESTClient(t, c)
	cm := fmt.Sprintf(`{"metadata":{"name":"cfg","ownerReferences":[{"apiVersion":"example.com/v1","kind":"Widget","name":"w","uid":%q}]}}`, owner.GetUID())
	var got []string
	for _, r := range []req{
		{method: "POST", path: "/api/v1/namespaces/ns/configmaps", body: cm},
		{method: "GET", path: "/apis/example.com/v1/namespaces/ns/widgets"},
		{method: "DELETE", path: "/apis/example.com/v1/namespaces/ns/widgets/w"},
		{method: "GET", path: "/api/v1/namespaces/ns/configmaps/cfg"},
	} {
		resp, body := rc.do(r)
		got = append(got, summary(resp.StatusCode, body))
	}
	// ConfigMaps have no generation, as in kube-apiserver.
	want := []string{"201 ConfigMap cfg rv=3 gen=0", "200 WidgetList items=1", "200 Status Success", "404 Status NotFound"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
}

func TestCoreKinds(t *testing.T) {
	c, _ := newTestCluster(t)
	addCoreKinds(c)
	rc := newRESTClient(t, c)
	var got []string
	for _, r := range []req{
		{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"team"}}`},
		{method: "POST", path: "/api/v1/namespaces/team/services", body: `{"metadata":{"name":"a"},"spec":{"ports":[{"port":80}]}}`},
		{method: "POST", path: "/api/v1/namespaces/team/services", body: `{"metadata":{"name":"b"},"spec":{"type":"NodePort","ports":[{"port":443,"targetPort":"https"}]}}`},
		{method: "PUT", path: "/api/v1/namespaces/team/services/b", body: `{"metadata":{"name":"b"},"spec":{"type":"NodePort","ports":[{"port":443,"targetPort":"https"}]}}`},
		{method: "PATCH", path: "/api/v1/namespaces/team/services/b", contentType: "application/merge-patch+json", body: `{"spec":{"clusterIP":"10.0.0.1"}}`},
		{method: "POST", path: "/api/v1/namespaces/team/secrets", body: `{"metadata":{"name":"s"},"stringData":{"k":"v"}}`},
	} {
		resp, body := rc.do(r)
		got = append(got, summary(resp.StatusCode, body))
	}
	// These kinds have no generation, as in kube-apiserver.
	want := []string{"201 Namespace team rv=2 gen=0", "201 Service a rv=3 gen=0", "201 Service b rv=4 gen=0",
		"200 Service b rv=4 gen=0", "422 Status Invalid", "201 Secret s rv=5 gen=0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
	ns := must(c.kinds[schema.GroupKind{Kind: "Namespace"}].(*Resource[*corev1.Namespace]).Namespace("").Get(ctxT(t), "team", metav1.GetOptions{}))(t)
	svcs := c.kinds[schema.GroupKind{Kind: "Service"}].(*Resource[*corev1.Service]).Namespace("team")
	a := must(svcs.Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	b := must(svcs.Get(ctxT(t), "b", metav1.GetOptions{}))(t)
	secret := must(c.kinds[schema.GroupKind{Kind: "Secret"}].(*Resource[*corev1.Secret]).Namespace("team").Get(ctxT(t), "s", metav1.GetOptions{}))(t)
	summary := []string{
		string(ns.Status.Phase),
		fmt.Sprintf("%s %s %v %s %v", a.Spec.Type, a.Spec.ClusterIP, a.Spec.Ports[0].TargetPort.String(), a.Spec.SessionAffinity, a.Spec.Ports[0].Protocol),
		fmt.Sprintf("%s %s %d %s", b.Spec.Type, b.Spec.ClusterIP, b.Spec.Ports[0].NodePort, b.Spec.ExternalTrafficPolicy),
		fmt.Sprintf("%s %q %d", secret.Type, secret.Data["k"], len(secret.StringData)),
	}
	wantSummary := []string{"Active", "ClusterIP 10.96.0.2 80 None TCP", "NodePort 10.96.0.3 30000 Cluster", `Opaque "v" 0`}
	if diff := cmp.Diff(wantSummary, summary); diff != "" {
		t.Errorf("stored objects mismatch (-want +got):\n%s", diff)
	}
}
