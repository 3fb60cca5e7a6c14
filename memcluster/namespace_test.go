package memcluster

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/clock"
)

func newNamespacedCluster(t *testing.T, cfg Config) (*Cluster, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	cfg.Clock, cfg.Seed, cfg.RequireNamespaces = fc, 1, true
	c := New(cfg)
	addCoreKinds(c)
	return c, fc
}

// kindClient is a client of a kind added by addCoreKinds.
func kindClient[T Object](c *Cluster, gk schema.GroupKind, ns string) Client[T] {
	return c.kinds[gk].(*Resource[T]).Namespace(ns)
}

func createNamespace(t *testing.T, c *Cluster, name string) *corev1.Namespace {
	t.Helper()
	return must(c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))(t)
}

func TestNamespaceDefaults(t *testing.T) {
	c, _ := newNamespacedCluster(t, Config{})
	ns := must(c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "team-"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x"}}, Status: corev1.NamespaceStatus{Phase: "Bogus"}}, metav1.CreateOptions{}))(t)
	if ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != ns.Name ||
		!cmp.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}) {
		t.Errorf("created namespace = %+v %+v %+v; want Active, the name label, and the kubernetes finalizer", ns.Status, ns.Labels, ns.Spec)
	}
	// Updates keep spec.finalizers and the status; the label follows the name.
	ns.Spec.Finalizers = nil
	ns.Labels = map[string]string{"team": "a"}
	ns.Status.Phase = corev1.NamespaceTerminating
	got := must(c.Namespaces().Update(ctxT(t), ns, metav1.UpdateOptions{}))(t)
	if len(got.Spec.Finalizers) != 2 || got.Status.Phase != corev1.NamespaceActive || got.Labels[corev1.LabelMetadataName] != got.Name || got.Labels["team"] != "a" {
		t.Errorf("updated namespace = %+v %+v %+v; want spec and status kept, both labels", got.Spec, got.Status, got.Labels)
	}
	for _, name := range initialNamespaces {
		if _, err := c.Namespaces().Get(ctxT(t), name, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s of a new cluster: %v", name, err)
		}
	}
	_, err := c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a namespace named a.b: %v; want Invalid (not a DNS label)", err)
	}
	_, err = c.Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"mine"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a namespace with finalizer %q: %v; want Invalid", "mine", err)
	}
}

func TestRequireNamespaces(t *testing.T) {
	c, _ := newNamespacedCluster(t, Config{})
	_, err := c.Pods("missing").Create(ctxT(t), podIn("missing", "p"), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "missing" not found` {
		t.Errorf("create in a missing namespace: %v; want NotFound for the namespace", err)
	}
	createNamespace(t, c, "ns")
	must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	// Without the option, any namespace will do.
	free, _ := newTestCluster(t)
	must(free.Pods("anywhere").Create(ctxT(t), podIn("anywhere", "p"), metav1.CreateOptions{}))(t)
	if _, err := free.Namespaces().Get(ctxT(t), "default", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace default without RequireNamespaces: %v; want none created", err)
	}
}

func TestImmortalNamespaces(t *testing.T) {
	c, _ := newNamespacedCluster(t, Config{})
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		err := c.Namespaces().Delete(ctxT(t), name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != `namespaces "`+name+`" is forbidden: this namespace may not be deleted` {
			t.Errorf("Delete(%s) = %v; want Forbidden", name, err)
		}
	}
	if err := c.Namespaces().Delete(ctxT(t), "kube-node-lease", metav1.DeleteOptions{}); err != nil {
		t.Errorf("Delete(kube-node-lease) = %v; want it to start terminating", err)
	}
}

// conditions summarises a namespace's deletion conditions.
func conditions(ns *corev1.Namespace) []string {
	var out []string
	for _, c := range ns.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
	}
	return out
}

func TestNamespaceTermination(t *testing.T) {
	c, fc := newNamespacedCluster(t, Config{})
	ctx := ctxT(t)
	createNamespace(t, c, "ns")
	d := must(c.Deployments("ns").Create(ctx, deployment("web"), metav1.CreateOptions{}))(t)
	rs := must(c.ReplicaSets("ns").Create(ctx, replicaSet("web", d), metav1.CreateOptions{}))(t)
	bound := pod("bound", "web", rs.UID)
	bound.Spec.NodeName = "node-0"
	must(c.Pods("ns").Create(ctx, bound, metav1.CreateOptions{}))(t)
	must(c.Pods("ns").Create(ctx, pod("pending", "web", rs.UID), metav1.CreateOptions{}))(t)
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	cms := kindClient[*corev1.ConfigMap](c, schema.GroupKind{Kind: "ConfigMap"}, "ns")
	must(cms.Create(ctx, held, metav1.CreateOptions{}))(t)
	fc.Step(time.Minute)

	if err := c.Namespaces().Delete(ctx, "ns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := must(c.Namespaces().Get(ctx, "ns", metav1.GetOptions{}))(t)
	if ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace after Delete: phase %s, deletionTimestamp %v; want Terminating", ns.Status.Phase, ns.DeletionTimestamp)
	}
	// Pods go first: while the bound one terminates, the rest stays and
	// the conditions say nothing of it.
	wantOK := []string{
		"NamespaceDeletionDiscoveryFailure=False ResourcesDiscovered: All resources successfully discovered",
		"NamespaceDeletionGroupVersionParsingFailure=False ParsedGroupVersions: All legacy kube types successfully parsed",
		"NamespaceDeletionContentFailure=False ContentDeleted: All content successfully deleted, may be waiting on finalization",
		"NamespaceContentRemaining=False ContentRemoved: All content successfully removed",
		"NamespaceFinalizersRemaining=False ContentHasNoFinalizers: All content-preserving finalizers finished",
	}
	if diff := cmp.Diff(wantOK, conditions(ns)); diff != "" {
		t.Errorf("conditions while a pod terminates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"deploy/web", "rs/web <web", "pod/bound <web (deleting)"}, world(t, c)); diff != "" {
		t.Errorf("world while a pod terminates (-want +got):\n%s", diff)
	}
	_, err := c.Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "late-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "late-" is forbidden: unable to create new content in namespace ns because it is being terminated` ||
		!apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("create in a terminating namespace: %v; want Forbidden with the NamespaceTerminating cause", err)
	}

	// The kubelet confirms: everything else goes, but the config map
	// held by its finalizer.
	zero := int64(0)
	if err := c.Pods("ns").Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	ns = must(c.Namespaces().Get(ctx, "ns", metav1.GetOptions{}))(t)
	want := []string{wantOK[0], wantOK[1], wantOK[2],
		"NamespaceContentRemaining=True SomeResourcesRemain: Some resources are remaining: configmaps. has 1 resource instances",
		"NamespaceFinalizersRemaining=True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	if diff := cmp.Diff(want, conditions(ns)); diff != "" {
		t.Errorf("conditions with a finalizer left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, world(t, c), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("world with a finalizer left (-want +got):\n%s", diff)
	}
	cm := must(cms.Get(ctx, "held", metav1.GetOptions{}))(t)
	if cm.DeletionTimestamp == nil {
		t.Error("the held config map has no deletionTimestamp")
	}
	cm.Finalizers = nil
	must(cms.Update(ctx, cm, metav1.UpdateOptions{}))(t)
	if _, err := c.Namespaces().Get(ctx, "ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace once empty: %v; want it finalized and gone", err)
	}
	// The name is free again.
	createNamespace(t, c, "ns")
}

func TestNamespaceDeleteWithPropagation(t *testing.T) {
	c, _ := newNamespacedCluster(t, Config{NoNamespaceController: true})
	createNamespace(t, c, "ns")
	orphan := metav1.DeletePropagationOrphan
	if err := c.Namespaces().Delete(ctxT(t), "ns", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	ns := must(c.Namespaces().Get(ctxT(t), "ns", metav1.GetOptions{}))(t)
	// The garbage collector drops the orphan finalizer at once (nothing
	// refers to the namespace); spec.finalizers stays, the controller off.
	if len(ns.Finalizers) != 0 || ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Spec.Finalizers) != 1 {
		t.Errorf("namespace = finalizers %v, phase %s, spec %v; want no metadata finalizer, Terminating, kubernetes", ns.Finalizers, ns.Status.Phase, ns.Spec.Finalizers)
	}
	// A second Delete changes nothing while spec.finalizers holds it.
	if err := c.Namespaces().Delete(ctxT(t), "ns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := must(c.Namespaces().Get(ctxT(t), "ns", metav1.GetOptions{}))(t); again.ResourceVersion != ns.ResourceVersion {
		t.Errorf("second Delete wrote the namespace: rv %s -> %s", ns.ResourceVersion, again.ResourceVersion)
	}
}

func TestNamespaceControllerOff(t *testing.T) {
	for _, cfg := range []Config{{NoNamespaceController: true}, {NoGarbageCollection: true}} {
		c, _ := newNamespacedCluster(t, cfg)
		ctx := ctxT(t)
		createNamespace(t, c, "ns")
		must(c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}))(t)
		if err := c.Namespaces().Delete(ctx, "ns", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := must(c.Namespaces().Get(ctx, "ns", metav1.GetOptions{}))(t)
		if len(ns.Status.Conditions) != 0 || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("%+v: namespace status %+v; want Terminating, no conditions (no controller)", cfg, ns.Status)
		}
		if _, err := c.Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err != nil {
			t.Errorf("%+v: the pod of a terminating namespace without controller: %v; want it kept", cfg, err)
		}
		// Finalizing by hand, as a test against envtest would.
		ns.Spec.Finalizers = nil
		if _, err := c.finalizeNamespace(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Namespaces().Get(ctx, "ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%+v: namespace after finalize: %v; want it gone", cfg, err)
		}
	}
}

func TestNamespaceREST(t *testing.T) {
	c, _ := newNamespacedCluster(t, Config{NoNamespaceController: true})
	rc := newRESTClient(t, c)
	createNamespace(t, c, "ns")
	steps := []struct {
		name string
		req  req
		want string
	}{
		{"create in a missing namespace", req{method: "POST", path: "/api/v1/namespaces/nope/configmaps", body: `{"metadata":{"name":"x"}}`}, "404 Status NotFound"},
		{"delete starts termination: the namespace", req{method: "DELETE", path: "/api/v1/namespaces/ns"}, "200 Namespace ns rv=7 gen=0"},
		{"create in it", req{method: "POST", path: "/api/v1/namespaces/ns/configmaps", body: `{"metadata":{"name":"x"}}`}, "403 Status Forbidden"},
		{"get finalize", req{method: "GET", path: "/api/v1/namespaces/ns/finalize"}, "405 Status MethodNotAllowed"},
		{"finalize another name", req{method: "PUT", path: "/api/v1/namespaces/ns/finalize", body: `{"metadata":{"name":"other"}}`}, "400 Status BadRequest"},
		{"finalize an invalid finalizer", req{method: "PUT", path: "/api/v1/namespaces/ns/finalize", body: `{"metadata":{"name":"ns"},"spec":{"finalizers":["bad"]}}`}, "422 Status Invalid"},
		{"finalize", req{method: "PUT", path: "/api/v1/namespaces/ns/finalize", body: `{"metadata":{"name":"ns"},"spec":{}}`}, "200 Namespace ns rv=8 gen=0"},
		{"gone", req{method: "GET", path: "/api/v1/namespaces/ns"}, "404 Status NotFound"},
		{"the namespaces of a cluster", req{method: "GET", path: "/api/v1/namespaces?fieldSelector=status.phase%3DActive"}, "200 NamespaceList items=4"},
		{"a label namespaces do not select on", req{method: "GET", path: "/api/v1/namespaces?fieldSelector=name%3Ddefault"}, "400 Status BadRequest"},
	}
	for _, st := range steps {
		resp, body := rc.do(st.req)
		if got := summary(resp.StatusCode, body); got != st.want {
			t.Errorf("%s: %s %s = %s; want %s", st.name, st.req.method, st.req.path, got, st.want)
		}
	}
	// A namespace deleted at once answers with itself, as kube-apiserver's.
	createNamespace(t, c, "quick")
	for range 2 {
		rc.do(req{method: "DELETE", path: "/api/v1/namespaces/quick"})
	}
	ns := must(c.Namespaces().Get(ctxT(t), "quick", metav1.GetOptions{}))(t)
	ns.Spec.Finalizers = nil
	must(c.finalizeNamespace(ctxT(t), ns, metav1.UpdateOptions{}))(t)
	if _, err := c.Namespaces().Get(ctxT(t), "quick", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("finalized namespace: %v; want gone", err)
	}
	resp, body := rc.do(req{method: "DELETE", path: "/api/v1/namespaces/default"})
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != http.StatusForbidden || st.Message != `namespaces "default" is forbidden: this namespace may not be deleted` {
		t.Errorf("DELETE default = %d %s; want 403 with kube-apiserver's message", resp.StatusCode, body)
	}
}
