package kube_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
)

func webDeployment() *appsv1.Deployment {
	l := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: l},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

// A typed clientset, unchanged, talks protobuf to memcluster.
func TestMemclusterClientset(t *testing.T) {
	_, cfg, rec := newMemcluster(t, memcluster.Config{Seed: 1})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	deployments := cs.AppsV1().Deployments("ns")
	var got []string
	note := func(what string, err error) {
		got = append(got, fmt.Sprintf("%s: %s", what, apierrors.ReasonForError(err)))
	}

	d, err := deployments.Create(ctx, webDeployment(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("created %s/%s gen=%d replicas=%d maxSurge=%s", d.Namespace, d.Name, d.Generation, *d.Spec.Replicas, d.Spec.Strategy.RollingUpdate.MaxSurge))
	_, err = deployments.Create(ctx, webDeployment(), metav1.CreateOptions{})
	note("create again", err)
	stale := d.DeepCopy()
	d.Spec.Replicas = new(int32(3))
	d, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale.Spec.Replicas = new(int32(4))
	_, err = deployments.Update(ctx, stale, metav1.UpdateOptions{})
	note("update from a stale read", err)
	d.Status.ObservedGeneration = d.Generation
	d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("status observedGeneration=%d generation=%d", d.Status.ObservedGeneration, d.Generation))
	d, err = deployments.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("patched image=%s generation=%d", d.Spec.Template.Spec.Containers[0].Image, d.Generation))
	sc, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 5
	if sc, err = deployments.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("scale replicas=%d selector=%s", sc.Spec.Replicas, sc.Status.Selector))
	bad := webDeployment()
	bad.Name, bad.Spec.Selector = "bad", nil
	_, err = deployments.Create(ctx, bad, metav1.CreateOptions{})
	note("create without a selector", err)
	list, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("listed %d, replicas=%d", len(list.Items), *list.Items[0].Spec.Replicas))
	svc, err := cs.CoreV1().Services("ns").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("service %s clusterIP=%s targetPort=%s", svc.Name, svc.Spec.ClusterIP, svc.Spec.Ports[0].TargetPort.String()))
	wrong := types.UID("wrong")
	err = deployments.Delete(ctx, "web", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	note("delete with a wrong uid", err)
	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	note("get after delete", err)
	want := []string{
		"created ns/web gen=1 replicas=1 maxSurge=25%",
		"create again: AlreadyExists",
		"update from a stale read: Conflict",
		"status observedGeneration=2 generation=2",
		"patched image=nginx:1.28 generation=3",
		"scale replicas=5 selector=app=web",
		"create without a selector: Invalid",
		"listed 1, replicas=5",
		"service web clusterIP=10.96.0.2 targetPort=80",
		"delete with a wrong uid: Conflict",
		"get after delete: NotFound",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clientset calls mismatch (-want +got):\n%s", diff)
	}
	for _, r := range rec.requests() {
		if r.method == "POST" && strings.HasPrefix(r.path, "/apis/apps/") && r.contentType != "application/vnd.kubernetes.protobuf" {
			t.Errorf("%s %s sent %q; want protobuf, client-go's default for built-in types", r.method, r.path, r.contentType)
		}
	}
}

// The dynamic client (JSON, unstructured) on a custom resource.
func TestMemclusterDynamic(t *testing.T) {
	_, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	widgets := dc.Resource(widgetGVR).Namespace("ns")
	w, err := widgets.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"size": int64(1)},
		"status":   map[string]any{"ready": true},
	}}
	var got []string
	show := func(u *unstructured.Unstructured, err error) {
		if err != nil {
			got = append(got, "error: "+string(apierrors.ReasonForError(err)))
			return
		}
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "ready")
		got = append(got, fmt.Sprintf("%s %s gen=%d size=%d ready=%t", u.GetKind(), u.GetName(), u.GetGeneration(), size, ready))
	}
	created, err := widgets.Create(ctx, obj, metav1.CreateOptions{})
	show(created, err)
	if err := unstructured.SetNestedField(created.Object, true, "status", "ready"); err != nil {
		t.Fatal(err)
	}
	show(widgets.UpdateStatus(ctx, created, metav1.UpdateOptions{}))
	show(widgets.Patch(ctx, "w", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}))
	show(widgets.Patch(ctx, "w", types.StrategicMergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{}))
	l, err := widgets.List(ctx, metav1.ListOptions{LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, fmt.Sprintf("%s of %d", l.GetKind(), len(l.Items)))
	if err := widgets.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		ev := <-w.ResultChan()
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*unstructured.Unstructured).GetResourceVersion()))
	}
	want := []string{
		"Widget w gen=1 size=1 ready=false",
		"Widget w gen=1 size=1 ready=true",
		"Widget w gen=2 size=2 ready=true",
		"error: UnsupportedMediaType",
		"WidgetList of 1",
		"ADDED 2", "MODIFIED 3", "MODIFIED 4", "DELETED 5", // a fresh cluster is at 1, as etcd
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dynamic client calls mismatch (-want +got):\n%s", diff)
	}
}

// Discovery, the REST mapper built on it, and the metadata client.
func TestMemclusterDiscovery(t *testing.T) {
	c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	got = append(got, "version "+v.GitVersion)
	for _, l := range lists {
		var names []string
		for _, r := range l.APIResources {
			names = append(names, r.Name)
		}
		got = append(got, l.GroupVersion+": "+strings.Join(names, ","))
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, gk := range []string{"Widget.example.com", "Deployment.apps", "Namespace"} {
		m, err := mapper.RESTMapping(schema.ParseGroupKind(gk))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s -> %s %s", gk, m.Resource, m.Scope.Name()))
	}
	want := []string{
		"version v1.37.1+memcluster",
		"v1: pods,pods/status,pods/eviction,namespaces,namespaces/status,namespaces/finalize,services,services/status,secrets,configmaps,serviceaccounts,events," +
			"persistentvolumeclaims,persistentvolumeclaims/status,persistentvolumes,persistentvolumes/status,endpoints,nodes,nodes/status," +
			"replicationcontrollers,replicationcontrollers/status,replicationcontrollers/scale",
		"apps/v1: replicasets,replicasets/status,replicasets/scale,deployments,deployments/status,deployments/scale," +
			"statefulsets,statefulsets/status,statefulsets/scale,daemonsets,daemonsets/status,controllerrevisions",
		"policy/v1: poddisruptionbudgets,poddisruptionbudgets/status",
		"events.k8s.io/v1: events",
		"coordination.k8s.io/v1: leases",
		"batch/v1: jobs,jobs/status,cronjobs,cronjobs/status",
		"autoscaling/v2: horizontalpodautoscalers,horizontalpodautoscalers/status",
		"networking.k8s.io/v1: ingresses,ingresses/status,ingressclasses,networkpolicies",
		"rbac.authorization.k8s.io/v1: roles,clusterroles,rolebindings,clusterrolebindings",
		"discovery.k8s.io/v1: endpointslices",
		"admissionregistration.k8s.io/v1: mutatingwebhookconfigurations,validatingwebhookconfigurations," +
			"validatingadmissionpolicies,validatingadmissionpolicies/status,validatingadmissionpolicybindings," +
			"mutatingadmissionpolicies,mutatingadmissionpolicybindings",
		"example.com/v1: widgets,widgets/status",
		"Widget.example.com -> example.com/v1, Resource=widgets namespace",
		"Deployment.apps -> apps/v1, Resource=deployments namespace",
		"Namespace -> /v1, Resource=namespaces root",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discovery mismatch (-want +got):\n%s", diff)
	}

	if _, err := c.Deployments("ns").Create(t.Context(), webDeployment(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := mc.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Items) != 1 || pl.Items[0].Name != "web" || pl.Items[0].Labels["app"] != "web" {
		t.Errorf("metadata list = %+v; want the metadata of web", pl.Items)
	}
}

// A typed watch (protobuf) and its 410 for a version the history lost.
func TestMemclusterTypedWatch(t *testing.T) {
	c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1, WatchHistory: 2})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 4 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)}}
		if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	ev := <-old.ResultChan()
	if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from a compacted version: %s %v; want an Expired error event", ev.Type, err)
	}
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: c.ResourceVersion(), FieldSelector: "metadata.name=c0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, name := range []string{"c1", "c0"} {
		if _, err := cs.CoreV1().ConfigMaps("ns").Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ev = <-w.ResultChan()
	if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Modified || !ok || cm.Name != "c0" || cm.Data["k"] != "v" {
		t.Errorf("event = %s %#v; want c0 modified", ev.Type, ev.Object)
	}
}
