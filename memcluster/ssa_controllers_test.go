package memcluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// The writes of the built-in controllers, and those kube-apiserver makes
// itself, are recorded in managedFields as a real cluster records them
// (kube/e2e's TestLifecycleSideBySide compares them with kube-apiserver
// and kube-controller-manager v1.37.1).

// newTrackedCluster is newSSACluster with deduced types for the kinds
// testSchemas leaves out (namespaces, budgets), and cfg's other options.
func newTrackedCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	cfg.Clock, cfg.Seed = newFake(), 1
	cfg.TypeConverter = TypeConverterChain(testTypeConverter(t), managedfields.NewDeducedTypeConverter())
	c := New(cfg)
	addCoreKinds(c)
	return c
}

func configMaps(c *Cluster, ns string) Client[*corev1.ConfigMap] {
	return kindClient[*corev1.ConfigMap](c, schema.GroupKind{Kind: "ConfigMap"}, ns)
}

// managersOf lists the entries' manager/operation/subresource.
func managersOf(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	return out
}

func TestGarbageCollectorWritesAreRecorded(t *testing.T) {
	c := newTrackedCluster(t, Config{})
	creator := metav1.CreateOptions{FieldManager: "creator"}
	// Orphaning removes the owner reference from its creator's fields.
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), creator))(t)
	rs := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("web-1", d), creator))(t)
	if len(rs.ManagedFields) != 1 || !strings.Contains(string(rs.ManagedFields[0].FieldsV1.Raw), `"f:ownerReferences"`) {
		t.Fatalf("the creator's fields %s; want its owner reference", rs.ManagedFields[0].FieldsV1.Raw)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := c.Deployments("ns").Delete(ctxT(t), "web", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	rs = must(c.ReplicaSets("ns").Get(ctxT(t), "web-1", metav1.GetOptions{}))(t)
	if len(rs.OwnerReferences) != 0 {
		t.Fatalf("owner references %v after orphaning", rs.OwnerReferences)
	}
	if diff := cmp.Diff([]string{"creator/Update/"}, managersOf(rs.ManagedFields)); diff != "" {
		t.Errorf("managers of the orphaned replica set (-want +got):\n%s", diff)
	}
	if len(rs.ManagedFields) == 1 {
		if f := string(rs.ManagedFields[0].FieldsV1.Raw); strings.Contains(f, "ownerReferences") || !strings.Contains(f, `"f:spec"`) {
			t.Errorf("the creator's fields after orphaning: %s; want its spec and no owner reference", f)
		}
	}

	// A dangling reference beside a live one is removed the same way.
	a := must(c.ReplicaSets("ns").Create(ctxT(t), replicaSet("a", nil), creator))(t)
	p := pod("p", "a", a.UID)
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "00000000-0000-0000-0000-000000000001"})
	must(c.Pods("ns").Create(ctxT(t), p, creator))(t)
	p = must(c.Pods("ns").Get(ctxT(t), "p", metav1.GetOptions{}))(t)
	f := strings.Join(fieldsOf(p.ManagedFields), "\n")
	if len(p.OwnerReferences) != 1 || !strings.Contains(f, string(a.UID)) || strings.Contains(f, "00000000-0000-0000-0000-000000000001") {
		t.Errorf("pod with a dangling reference: refs %v, creator's fields %s; want only the live owner's", p.OwnerReferences, f)
	}

	// Dropping the orphan finalizer takes it from its creator's fields.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keeper", Finalizers: []string{metav1.FinalizerOrphanDependents, "example.com/hold"}}}
	must(configMaps(c, "ns").Create(ctxT(t), cm, creator))(t)
	if err := configMaps(c, "ns").Delete(ctxT(t), "keeper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm = must(configMaps(c, "ns").Get(ctxT(t), "keeper", metav1.GetOptions{}))(t)
	want := []string{`creator/Update: {"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/hold\"":{}}}}`}
	if diff := cmp.Diff(want, fieldsOf(cm.ManagedFields)); diff != "" {
		t.Errorf("after the orphan finalizer's drop (-want +got):\n%s", diff)
	}
}

func TestNamespaceWritesAreRecorded(t *testing.T) {
	c := newTrackedCluster(t, Config{RequireNamespaces: true})
	def := must(c.Namespaces().Get(ctxT(t), "default", metav1.GetOptions{}))(t)
	want := []string{`kube-apiserver/Update: {"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}`}
	if diff := cmp.Diff(want, fieldsOf(def.ManagedFields)); diff != "" {
		t.Errorf("namespace default (-want +got):\n%s", diff)
	}

	must(c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{FieldManager: "creator"}))(t)
	must(configMaps(c, "ns").Create(ctxT(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}))(t)
	if err := c.Namespaces().Delete(ctxT(t), "ns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := must(c.Namespaces().Get(ctxT(t), "ns", metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]string{"creator/Update/", "kube-controller-manager/Update/status"}, managersOf(ns.ManagedFields)); diff != "" {
		t.Errorf("managers of the terminating namespace (-want +got):\n%s", diff)
	}
	if len(ns.ManagedFields) == 2 {
		if f := string(ns.ManagedFields[1].FieldsV1.Raw); !strings.Contains(f, `"f:conditions"`) || strings.Contains(f, "phase") {
			t.Errorf("the namespace controller's fields %s; want its conditions (not the phase kube-apiserver set)", f)
		}
	}

	// A finalize is recorded for its subresource.
	must(c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{FieldManager: "creator"}))(t)
	other := must(c.Namespaces().Get(ctxT(t), "other", metav1.GetOptions{}))(t)
	other.Labels["x"] = "1"
	other.Spec.Finalizers = nil
	other = must(c.finalizeNamespace(ctxT(t), other, metav1.UpdateOptions{FieldManager: "fintool"}))(t)
	want = []string{
		`creator/Update: {"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}`,
		`fintool/Update/finalize: {"f:metadata":{"f:labels":{"f:x":{}}}}`,
	}
	if diff := cmp.Diff(want, fieldsOf(other.ManagedFields)); diff != "" {
		t.Errorf("after a finalize (-want +got):\n%s", diff)
	}
}

func TestDisruptionWritesAreRecorded(t *testing.T) {
	c := newTrackedCluster(t, Config{})
	for _, name := range []string{"a", "b", "c"} {
		readyPod(t, c, name, true, nil)
	}
	b := must(pdbClient(c, "ns").Create(ctxT(t), budget("web", intOrStr("2"), nil), metav1.CreateOptions{FieldManager: "creator"}))(t)
	b = must(pdbClient(c, "ns").Get(ctxT(t), b.Name, metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]string{"creator/Update/", "kube-controller-manager/Update/status"}, managersOf(b.ManagedFields)); diff != "" {
		t.Errorf("managers of the computed budget (-want +got):\n%s", diff)
	}
	before := must(c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	held := before.DeepCopy()
	held.Finalizers = []string{"example.com/hold"}
	must(c.Pods("ns").Update(ctxT(t), held, metav1.UpdateOptions{FieldManager: "holder"}))(t)
	before = must(c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	if err := c.Evict(ctxT(t), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's own update of the budget is its manager's; the
	// disruption controller's recomputation follows.
	b = must(pdbClient(c, "ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]string{"creator/Update/", "kube-apiserver/Update/status", "kube-controller-manager/Update/status"}, managersOf(b.ManagedFields)); diff != "" {
		t.Errorf("managers of the budget after an eviction (-want +got):\n%s", diff)
	}
	// The DisruptionTarget condition is written past the field manager.
	a := must(c.Pods("ns").Get(ctxT(t), "a", metav1.GetOptions{}))(t)
	if a.DeletionTimestamp == nil || !hasPodCondition(a, corev1.DisruptionTarget) {
		t.Fatalf("the evicted pod: deleting %t, conditions %v", a.DeletionTimestamp != nil, a.Status.Conditions)
	}
	if diff := cmp.Diff(fieldsOf(before.ManagedFields), fieldsOf(a.ManagedFields)); diff != "" {
		t.Errorf("the eviction changed the pod's managedFields (-before +after):\n%s", diff)
	}
}

func hasPodCondition(p *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func TestUpdatesAreRecordedAsSent(t *testing.T) {
	// kube-apiserver records an update before its strategy prepares it:
	// spec.finalizers sent in a namespace's update are the sender's,
	// although the update keeps the stored ones.
	c := newTrackedCluster(t, Config{})
	AddBuiltinKinds(c)
	must(c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "upd"}}, metav1.CreateOptions{FieldManager: "maker"}))(t)
	ns := must(c.Namespaces().Get(ctxT(t), "upd", metav1.GetOptions{}))(t)
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "example.com/x")
	ns = must(c.Namespaces().Update(ctxT(t), ns, metav1.UpdateOptions{FieldManager: "editor"}))(t)
	want := []string{ // at the same time, so by manager
		`editor/Update: {"f:spec":{"f:finalizers":{}}}`,
		`maker/Update: {"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}`,
	}
	if diff := cmp.Diff(want, fieldsOf(ns.ManagedFields)); diff != "" || len(ns.Spec.Finalizers) != 1 {
		t.Errorf("finalizers %v, managedFields (-want +got):\n%s", ns.Spec.Finalizers, diff)
	}

	// A DaemonSet's template generation, which kube-apiserver converts
	// into its annotation, is its creator's.
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ds"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	ds = must(kindClient[*appsv1.DaemonSet](c, schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, "ns").Create(ctxT(t), ds, metav1.CreateOptions{FieldManager: "creator"}))(t)
	if f := strings.Join(fieldsOf(ds.ManagedFields), "\n"); !strings.Contains(f, `"f:annotations":{".":{},"f:deprecated.daemonset.template.generation":{}}`) {
		t.Errorf("the DaemonSet's creator's fields: %s; want the template generation's annotation", f)
	}
}
