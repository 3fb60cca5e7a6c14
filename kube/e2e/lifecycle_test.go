//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// TestLifecycleSideBySide sends the same requests to kube-apiserver v1.37.1
// (with kube-controller-manager's garbage collector, namespace and
// disruption controllers) and to memcluster set up as the test bench sets
// it up, and compares what each side answers and ends up with: namespace
// termination, foreground and orphan deletion, eviction with a
// PodDisruptionBudget, field selectors and pagination, and the
// managedFields of what the controllers and kube-apiserver itself wrote
// along the way. The real side is polled until its controllers
// have done their part; memcluster's run inside the request.
func TestLifecycleSideBySide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The package's kube-controller-manager runs the garbage collector;
	// this one adds the two other controllers the scenarios need.
	kcm, err := cp.StartKCMProcess(ctx, t.TempDir(), "kcm-lifecycle", filepath.Join(cp.Dir, "kubeconfig"),
		"namespace-controller,disruption-controller", "--leader-elect=false")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := kcm.Term(30 * time.Second); err != nil {
			t.Log(err)
		}
	}()
	builtinTypes := memcluster.LazyTypeConverter(func() managedfields.TypeConverter { return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme) })
	mem := memcluster.New(memcluster.Config{Seed: 1, RequireNamespaces: true, // as clustertest configures it
		TypeConverter: memcluster.TypeConverterChain(builtinTypes, managedfields.NewDeducedTypeConverter())})
	memcluster.AddBuiltinKinds(mem)
	memCfg := &rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(mem)}, QPS: -1}
	sides := []struct {
		name string
		cfg  *rest.Config
	}{{"kube-apiserver", cp.Config(100, 200)}, {"memcluster", memCfg}}
	scenarios := []struct {
		name string
		run  func(r *lifeRun)
	}{
		{"namespace termination", namespaceTermination},
		{"foreground deletion", foregroundDeletion},
		{"orphan deletion", orphanDeletion},
		{"eviction with a PDB", evictionWithPDB},
		{"field selectors and pagination", selectorsAndPages},
	}
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	var rows []string
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var got [2][]string
			var took [2]time.Duration
			for i, s := range sides {
				r := &lifeRun{t: t, ctx: ctx, cs: kubernetes.NewForConfigOrDie(s.cfg), ns: strings.ToLower(strings.ReplaceAll(sc.name, " ", "-")) + "-" + suffix}
				start := time.Now()
				sc.run(r)
				took[i] = time.Since(start)
				got[i] = r.lines
			}
			same := "yes"
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				same = "NO"
				t.Errorf("%s: kube-apiserver and memcluster differ (-kube-apiserver +memcluster):\n%s", sc.name, diff)
			}
			t.Logf("%s, as both sides saw it:\n%s", sc.name, strings.Join(got[1], "\n"))
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s |", sc.name, len(got[0]), same,
				took[0].Round(100*time.Millisecond), took[1].Round(time.Millisecond)))
		})
	}
	var b strings.Builder
	b.WriteString("| lifecycle scenario | observations compared | same answers and end state | kube-apiserver + KCM | memcluster |\n|---|---|---|---|---|\n")
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
	report(t, b.String())
}

// lifeRun is one scenario on one side: what it observed, line by line.
type lifeRun struct {
	t     *testing.T
	ctx   context.Context
	cs    kubernetes.Interface
	ns    string
	lines []string
}

func (r *lifeRun) note(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// must fails the scenario on an unexpected error.
func (r *lifeRun) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// eventually polls observe until it reports done (at once for memcluster,
// whose controllers act inside the request), and notes what it saw last.
func (r *lifeRun) eventually(label string, observe func() (string, bool)) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, done := observe()
		if done {
			r.note("%s: %s", label, s)
			return
		}
		if time.Now().After(deadline) {
			r.note("%s: timed out at %s", label, s)
			r.t.Errorf("%s: timed out; last seen %s", label, s)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errText describes an API error as a client sees it.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return "error: " + err.Error()
	}
	s := st.Status()
	out := fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	if d := s.Details; d != nil {
		for _, c := range d.Causes {
			out += fmt.Sprintf(" [%s %s %s]", c.Type, c.Field, c.Message)
		}
		if d.RetryAfterSeconds > 0 {
			out += fmt.Sprintf(" retry-after=%d", d.RetryAfterSeconds)
		}
	}
	return out
}

// objText describes an object's lifecycle state.
func objText(kind string, o metav1.Object) string {
	s := kind + "/" + o.GetName()
	if o.GetDeletionTimestamp() != nil {
		s += " deleting"
	}
	if f := o.GetFinalizers(); len(f) > 0 {
		s += fmt.Sprintf(" finalizers=%v", f)
	}
	for _, ref := range o.GetOwnerReferences() {
		s += fmt.Sprintf(" owner=%s/%s", ref.Kind, ref.Name)
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			s += "(blocking)"
		}
	}
	return s
}

// uidPattern matches a UID, which differs between the sides.
var uidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// fieldsText describes an object's managedFields: each entry's manager,
// operation, subresource and fields (an owner reference's key without
// its UID), without its time (the two sides write at different
// moments), in a fixed order.
func fieldsText(o metav1.Object) string {
	var out []string
	for _, e := range o.GetManagedFields() {
		s := e.Manager + " " + string(e.Operation)
		if e.Subresource != "" {
			s += " /" + e.Subresource
		}
		if e.FieldsV1 != nil {
			s += " " + uidPattern.ReplaceAllString(string(e.FieldsV1.Raw), "UID")
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return "managedFields[" + strings.Join(out, "; ") + "]"
}

// noteFields notes the managedFields of an object, or why it could not
// be read.
func (r *lifeRun) noteFields(label string, get func() (metav1.Object, error)) {
	o, err := get()
	if err != nil {
		r.note("%s: %s", label, errText(err))
		return
	}
	r.note("%s: %s", label, fieldsText(o))
}

// world lists the deployments, replica sets, pods and config maps of the
// scenario's namespace.
func (r *lifeRun) world() string {
	var out []string
	if l, err := r.cs.AppsV1().Deployments(r.ns).List(r.ctx, metav1.ListOptions{}); err == nil {
		for i := range l.Items {
			out = append(out, objText("deployment", &l.Items[i]))
		}
	}
	if l, err := r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{}); err == nil {
		for i := range l.Items {
			out = append(out, objText("replicaset", &l.Items[i]))
		}
	}
	if l, err := r.cs.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{}); err == nil {
		for i := range l.Items {
			out = append(out, objText("pod", &l.Items[i]))
		}
	}
	if l, err := r.cs.CoreV1().ConfigMaps(r.ns).List(r.ctx, metav1.ListOptions{}); err == nil {
		for i := range l.Items {
			out = append(out, objText("configmap", &l.Items[i]))
		}
	}
	sort.Strings(out)
	return "[" + strings.Join(out, ", ") + "]"
}

// settleGC waits until the garbage collector has seen what the scenario
// created so far: it collects a config map created after it with an owner
// that does not exist. (Its informers see each kind on its own, so an
// object deleted right after its dependents were created could otherwise
// lose them to the collector, which would not know them yet.)
func (r *lifeRun) settleGC() {
	r.t.Helper()
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gc-probe",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "nothing", UID: "00000000-0000-0000-0000-000000000000"}}}}
	_, err := r.cs.CoreV1().ConfigMaps(r.ns).Create(r.ctx, probe, metav1.CreateOptions{})
	r.must(err)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := r.cs.CoreV1().ConfigMaps(r.ns).Get(r.ctx, "gc-probe", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the garbage collector did not collect its probe: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *lifeRun) createNamespace() {
	_, err := r.cs.CoreV1().Namespaces().Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{})
	r.must(err)
}

func lifePod(name string, owner *metav1.OwnerReference, finalizers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}, Finalizers: finalizers},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

func ownedBy(kind, name string, uid any, blocking bool) *metav1.OwnerReference {
	yes := true
	ref := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: &yes, BlockOwnerDeletion: &blocking}
	switch u := uid.(type) {
	case metav1.Object:
		ref.UID = u.GetUID()
	}
	return ref
}

func lifeDeployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: l},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}},
	}}
}

func lifeReplicaSet(name string, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	l := map[string]string{"app": "web"}
	zero := int32(0)
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{*owner}}, Spec: appsv1.ReplicaSetSpec{
		Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: l},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}},
	}}
}

// dropFinalizers removes the finalizers of a config map or a pod.
func (r *lifeRun) dropFinalizers(kind, name string) {
	switch kind {
	case "configmap":
		cm, err := r.cs.CoreV1().ConfigMaps(r.ns).Get(r.ctx, name, metav1.GetOptions{})
		r.must(err)
		cm.Finalizers = nil
		_, err = r.cs.CoreV1().ConfigMaps(r.ns).Update(r.ctx, cm, metav1.UpdateOptions{})
		r.must(err)
	case "pod":
		p, err := r.cs.CoreV1().Pods(r.ns).Get(r.ctx, name, metav1.GetOptions{})
		r.must(err)
		p.Finalizers = nil
		_, err = r.cs.CoreV1().Pods(r.ns).Update(r.ctx, p, metav1.UpdateOptions{})
		r.must(err)
	}
}

func namespaceConditions(ns *corev1.Namespace) string {
	var out []string
	for _, c := range ns.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("phase=%s conditions=%v", ns.Status.Phase, out)
}

func namespaceTermination(r *lifeRun) {
	r.createNamespace()
	cms := r.cs.CoreV1().ConfigMaps(r.ns)
	_, err := cms.Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
	r.must(err)
	_, err = cms.Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	r.must(err)
	_, err = r.cs.CoreV1().Pods(r.ns).Create(r.ctx, lifePod("p", nil), metav1.CreateOptions{})
	r.must(err)
	_, err = r.cs.CoreV1().Secrets(r.ns).Create(r.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	r.must(err)
	ns, err := r.cs.CoreV1().Namespaces().Get(r.ctx, r.ns, metav1.GetOptions{})
	r.must(err)
	r.note("namespace as created: finalizers=%v label=%t %s", ns.Spec.Finalizers, ns.Labels[corev1.LabelMetadataName] == r.ns, namespaceConditions(ns))
	r.note("namespace as created: %s", fieldsText(ns))
	r.noteFields("namespace default, which kube-apiserver created", func() (metav1.Object, error) {
		return r.cs.CoreV1().Namespaces().Get(r.ctx, "default", metav1.GetOptions{})
	})
	_, err = cms.Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	r.must(err)
	_, err = r.cs.CoreV1().ConfigMaps(r.ns+"-missing").Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	r.note("create in a missing namespace: %s", strings.ReplaceAll(errText(err), r.ns, "NS"))
	r.note("delete namespace default: %s", errText(r.cs.CoreV1().Namespaces().Delete(r.ctx, "default", metav1.DeleteOptions{})))
	r.must(r.cs.CoreV1().Namespaces().Delete(r.ctx, r.ns, metav1.DeleteOptions{}))
	_, err = cms.Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "late-"}}, metav1.CreateOptions{})
	r.note("create in the terminating namespace: %s", strings.ReplaceAll(errText(err), r.ns, "NS"))
	r.eventually("content held by a finalizer", func() (string, bool) {
		ns, err := r.cs.CoreV1().Namespaces().Get(r.ctx, r.ns, metav1.GetOptions{})
		if err != nil {
			return errText(err), false
		}
		s := namespaceConditions(ns) + " " + r.world()
		return s, slices.ContainsFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		})
	})
	r.noteFields("the terminating namespace, its conditions written by the namespace controller", func() (metav1.Object, error) {
		return r.cs.CoreV1().Namespaces().Get(r.ctx, r.ns, metav1.GetOptions{})
	})
	r.dropFinalizers("configmap", "held")
	r.eventually("once the finalizer is gone", func() (string, bool) {
		_, err := r.cs.CoreV1().Namespaces().Get(r.ctx, r.ns, metav1.GetOptions{})
		return strings.ReplaceAll(errText(err), r.ns, "NS"), apierrors.IsNotFound(err)
	})
}

func foregroundDeletion(r *lifeRun) {
	r.createNamespace()
	d, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, lifeDeployment("web"), metav1.CreateOptions{})
	r.must(err)
	rs, err := r.cs.AppsV1().ReplicaSets(r.ns).Create(r.ctx, lifeReplicaSet("web-1", ownedBy("Deployment", "web", d, true)), metav1.CreateOptions{})
	r.must(err)
	for _, p := range []*corev1.Pod{lifePod("a", ownedBy("ReplicaSet", "web-1", rs, true)), lifePod("held", ownedBy("ReplicaSet", "web-1", rs, true), "example.com/hold")} {
		_, err := r.cs.CoreV1().Pods(r.ns).Create(r.ctx, p, metav1.CreateOptions{})
		r.must(err)
	}
	side := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "side", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{*ownedBy("Deployment", "web", d, false)}}}
	_, err = r.cs.CoreV1().ConfigMaps(r.ns).Create(r.ctx, side, metav1.CreateOptions{})
	r.must(err)
	r.settleGC()
	fg := metav1.DeletePropagationForeground
	r.must(r.cs.AppsV1().Deployments(r.ns).Delete(r.ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}))
	r.eventually("dependents deleted, a blocking one held", func() (string, bool) {
		w := r.world()
		return w, !strings.Contains(w, "pod/a ") && strings.Contains(w, "pod/held deleting") && strings.Contains(w, "configmap/side deleting")
	})
	r.noteFields("the replica set deleted in the foreground", func() (metav1.Object, error) {
		return r.cs.AppsV1().ReplicaSets(r.ns).Get(r.ctx, "web-1", metav1.GetOptions{})
	})
	r.noteFields("the held pod", func() (metav1.Object, error) { return r.cs.CoreV1().Pods(r.ns).Get(r.ctx, "held", metav1.GetOptions{}) })
	r.dropFinalizers("pod", "held")
	r.eventually("the blocking one gone", func() (string, bool) {
		w := r.world()
		return w, !strings.Contains(w, "deployment/") && !strings.Contains(w, "replicaset/")
	})
	r.dropFinalizers("configmap", "side")
	r.eventually("the rest", func() (string, bool) { w := r.world(); return w, w == "[]" })
}

func orphanDeletion(r *lifeRun) {
	r.createNamespace()
	d, err := r.cs.AppsV1().Deployments(r.ns).Create(r.ctx, lifeDeployment("web"), metav1.CreateOptions{})
	r.must(err)
	rs, err := r.cs.AppsV1().ReplicaSets(r.ns).Create(r.ctx, lifeReplicaSet("web-1", ownedBy("Deployment", "web", d, true)), metav1.CreateOptions{})
	r.must(err)
	_, err = r.cs.CoreV1().Pods(r.ns).Create(r.ctx, lifePod("a", ownedBy("ReplicaSet", "web-1", rs, true)), metav1.CreateOptions{})
	r.must(err)
	r.settleGC()
	orphan := metav1.DeletePropagationOrphan
	r.must(r.cs.AppsV1().Deployments(r.ns).Delete(r.ctx, "web", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	r.eventually("orphaned by propagationPolicy", func() (string, bool) {
		w := r.world()
		return w, !strings.Contains(w, "deployment/")
	})
	r.noteFields("the replica set the garbage collector orphaned", func() (metav1.Object, error) {
		return r.cs.AppsV1().ReplicaSets(r.ns).Get(r.ctx, "web-1", metav1.GetOptions{})
	})
	yes := true
	r.must(r.cs.AppsV1().ReplicaSets(r.ns).Delete(r.ctx, "web-1", metav1.DeleteOptions{OrphanDependents: &yes}))
	r.eventually("orphaned by the legacy orphanDependents", func() (string, bool) {
		w := r.world()
		return w, !strings.Contains(w, "replicaset/")
	})
	r.noteFields("the pod the garbage collector orphaned", func() (metav1.Object, error) { return r.cs.CoreV1().Pods(r.ns).Get(r.ctx, "a", metav1.GetOptions{}) })
	// An owner created with the orphan finalizer and one of its own: the
	// collector drops the orphan finalizer, which its creator set.
	keeper := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keeper", Finalizers: []string{metav1.FinalizerOrphanDependents, "example.com/hold"}}}
	_, err = r.cs.CoreV1().ConfigMaps(r.ns).Create(r.ctx, keeper, metav1.CreateOptions{})
	r.must(err)
	r.must(r.cs.CoreV1().ConfigMaps(r.ns).Delete(r.ctx, "keeper", metav1.DeleteOptions{}))
	r.eventually("the orphan finalizer dropped", func() (string, bool) {
		cm, err := r.cs.CoreV1().ConfigMaps(r.ns).Get(r.ctx, "keeper", metav1.GetOptions{})
		if err != nil {
			return errText(err), false
		}
		return objText("configmap", cm) + " " + fieldsText(cm), !slices.Contains(cm.Finalizers, metav1.FinalizerOrphanDependents)
	})
	r.dropFinalizers("configmap", "keeper")
	bg := metav1.DeletePropagationBackground
	r.note("both orphanDependents and a policy: %s", errText(r.cs.CoreV1().Pods(r.ns).Delete(r.ctx, "a", metav1.DeleteOptions{OrphanDependents: &yes, PropagationPolicy: &bg})))
}

// postEviction evicts a pod through the REST API and returns the answer:
// its HTTP code and body.
func (r *lifeRun) postEviction(name string) string {
	body, err := json.Marshal(&policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: name}})
	r.must(err)
	res := r.cs.CoreV1().RESTClient().Post().Namespace(r.ns).Resource("pods").Name(name).SubResource("eviction").
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Body(body).Do(r.ctx)
	var code int
	res.StatusCode(&code)
	raw, _ := res.Raw()
	return fmt.Sprintf("%d %s", code, strings.TrimSpace(string(raw)))
}

func pdbText(b *policyv1.PodDisruptionBudget) string {
	s := b.Status
	out := fmt.Sprintf("observed=%d/%d expected=%d healthy=%d desired=%d allowed=%d disrupted=%d", s.ObservedGeneration, b.Generation,
		s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed, len(s.DisruptedPods))
	for _, c := range s.Conditions {
		out += fmt.Sprintf(" %s=%s/%s(%d):%q", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return out
}

func evictionWithPDB(r *lifeRun) {
	r.createNamespace()
	pods := r.cs.CoreV1().Pods(r.ns)
	for _, name := range []string{"a", "b", "c"} {
		p, err := pods.Create(r.ctx, lifePod(name, nil), metav1.CreateOptions{})
		r.must(err)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}}
		_, err = pods.UpdateStatus(r.ctx, p, metav1.UpdateOptions{})
		r.must(err)
	}
	two := intstr.FromInt32(2)
	pdbs := r.cs.PolicyV1().PodDisruptionBudgets(r.ns)
	_, err := pdbs.Create(r.ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{})
	r.must(err)
	budget := func(label string, done func(*policyv1.PodDisruptionBudget) bool) {
		r.eventually(label, func() (string, bool) {
			b, err := pdbs.Get(r.ctx, "web", metav1.GetOptions{})
			if err != nil {
				return errText(err), false
			}
			return pdbText(b), done(b)
		})
	}
	budget("budget computed", func(b *policyv1.PodDisruptionBudget) bool { return b.Status.CurrentHealthy == 3 })
	budgetFields := func() (metav1.Object, error) { return pdbs.Get(r.ctx, "web", metav1.GetOptions{}) }
	r.noteFields("budget computed", budgetFields)
	r.note("evict a: %s", r.postEviction("a"))
	budget("budget after the eviction", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Status.ExpectedPods == 2 && b.Status.CurrentHealthy == 2 && len(b.Status.DisruptedPods) == 0
	})
	r.noteFields("budget after the eviction", budgetFields)
	r.note("evict b: %s", r.postEviction("b"))
	r.note("evict b with client-go: %s", errText(r.cs.PolicyV1().Evictions(r.ns).Evict(r.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: r.ns}})))
	_, err = pods.Create(r.ctx, lifePod("pending", nil), metav1.CreateOptions{})
	r.must(err)
	r.note("evict a pending pod: %s", r.postEviction("pending"))
	one := intstr.FromInt32(1)
	_, err = pdbs.Create(r.ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{})
	r.must(err)
	r.note("evict b under two budgets: %s", r.postEviction("b"))
	r.note("evict a missing pod: %s", strings.ReplaceAll(r.postEviction("a"), r.ns, "NS"))
	r.eventually("pods left", func() (string, bool) {
		l, err := pods.List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return errText(err), false
		}
		var out []string
		for i := range l.Items {
			out = append(out, objText("pod", &l.Items[i]))
		}
		return fmt.Sprint(out), len(l.Items) == 2
	})
	// A pod no budget covers, held by a finalizer: the eviction gives it
	// the DisruptionTarget condition, then deletes it.
	held := lifePod("held", nil, "example.com/hold")
	held.Labels = map[string]string{"app": "solo"}
	_, err = pods.Create(r.ctx, held, metav1.CreateOptions{})
	r.must(err)
	r.note("evict a held pod: %s", r.postEviction("held"))
	r.eventually("the evicted held pod", func() (string, bool) {
		p, err := pods.Get(r.ctx, "held", metav1.GetOptions{})
		if err != nil {
			return errText(err), false
		}
		var conds []string
		for _, c := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		return fmt.Sprintf("%s conditions=%v %s", objText("pod", p), conds, fieldsText(p)), p.DeletionTimestamp != nil
	})
	r.dropFinalizers("pod", "held")
}

func selectorsAndPages(r *lifeRun) {
	r.createNamespace()
	pods := r.cs.CoreV1().Pods(r.ns)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		p := lifePod(name, nil)
		if name < "c" {
			p.Spec.NodeName = "node-1"
		}
		p, err := pods.Create(r.ctx, p, metav1.CreateOptions{})
		r.must(err)
		if name == "b" || name == "d" {
			p.Status.Phase = corev1.PodRunning
			_, err = pods.UpdateStatus(r.ctx, p, metav1.UpdateOptions{})
			r.must(err)
		}
	}
	_, err := r.cs.CoreV1().Events(r.ns).Create(r.ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "a", Namespace: r.ns}, Reason: "Started", Type: "Normal"}, metav1.CreateOptions{})
	r.must(err)
	list := func(sel string) string {
		l, err := pods.List(r.ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return errText(err)
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return fmt.Sprint(names)
	}
	for _, sel := range []string{"spec.nodeName=node-1", "spec.nodeName=", "status.phase=Running", "status.phase!=Running,spec.nodeName=node-1",
		"spec.host=node-1", "spec.restartPolicy=Always,spec.schedulerName=default-scheduler", "status.podIP=", "spec.nope=1"} {
		r.note("pods %s: %s", sel, list(sel))
	}
	ev, err := r.cs.CoreV1().Events(r.ns).List(r.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=a,involvedObject.kind=Pod,reason=Started"})
	r.note("events by involved object: %d %s", len(ev.Items), errText(err))
	_, err = r.cs.AppsV1().ReplicaSets(r.ns).List(r.ctx, metav1.ListOptions{FieldSelector: "status.replicas=0"})
	r.note("replica sets by status.replicas: %s", errText(err))
	_, err = r.cs.CoreV1().Namespaces().List(r.ctx, metav1.ListOptions{FieldSelector: "name=" + r.ns})
	r.note("namespaces by name: %s", errText(err))
	token := ""
	for range 4 {
		l, err := pods.List(r.ctx, metav1.ListOptions{Limit: 2, Continue: token})
		if err != nil {
			r.note("page: %s", errText(err))
			break
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		rem := "none"
		if n := l.RemainingItemCount; n != nil {
			rem = fmt.Sprint(*n)
		}
		r.note("page %v remaining=%s token=%s", names, rem, tokenStart(l.Continue))
		if token = l.Continue; token == "" {
			break
		}
	}
	l, err := pods.List(r.ctx, metav1.ListOptions{Limit: 2, LabelSelector: "app=web"})
	r.must(err)
	r.note("page with a selector: %d items, remaining set %t, token=%s", len(l.Items), l.RemainingItemCount != nil, tokenStart(l.Continue))
	l, err = pods.List(r.ctx, metav1.ListOptions{Limit: 2, ResourceVersion: "0"})
	r.must(err)
	r.note("limit at resourceVersion 0: %d items, token=%q", len(l.Items), l.Continue)
	_, err = pods.List(r.ctx, metav1.ListOptions{Limit: 2, Continue: "bm90IGEgdG9rZW4"})
	r.note("a bad token: %s", errText(err))
}

// tokenStart is the part of a continue token that does not depend on the
// server's resourceVersion: the key it starts at.
func tokenStart(token string) string {
	if token == "" {
		return "none"
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "undecodable"
	}
	var t struct {
		V     string `json:"v"`
		Start string `json:"start"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return "undecodable"
	}
	return fmt.Sprintf("%s %q", t.V, t.Start)
}
