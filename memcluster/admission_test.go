package memcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/admit"
)

// fakeAdmission records the requests of both stages as one line each, and
// runs the test's hooks. It reads the cluster in every call, which
// deadlocks if the cluster holds its lock.
type fakeAdmission struct {
	c        *Cluster
	mu       sync.Mutex
	calls    []string
	mutate   func(ctx context.Context, req *admit.Request) error
	validate func(ctx context.Context, req *admit.Request) error
}

func (f *fakeAdmission) record(stage string, req *admit.Request) {
	line := fmt.Sprintf("%s %s %s", stage, req.Operation, req.Resource.Resource)
	if req.Subresource != "" {
		line += "/" + req.Subresource
	}
	line += fmt.Sprintf(" %s/%s kind=%s user=%s", req.Namespace, req.Name, req.Kind.Kind, req.User.Name)
	if req.Object != nil {
		line += " object=" + describeAdmitted(req.Object)
	}
	if req.OldObject != nil {
		line += " old=" + describeAdmitted(req.OldObject)
	}
	f.mu.Lock()
	f.calls = append(f.calls, line)
	f.mu.Unlock()
}

// describeAdmitted names what a test looks at in an admitted object.
func describeAdmitted(obj runtime.Object) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return fmt.Sprintf("pod(%s uid=%t restart=%s labels=%v)", o.Name, o.UID != "", o.Spec.RestartPolicy, o.Labels)
	case *appsv1.Deployment:
		return fmt.Sprintf("deployment(replicas=%d rv=%s)", *o.Spec.Replicas, o.ResourceVersion)
	case *autoscalingv1.Scale:
		return fmt.Sprintf("scale(%d)", o.Spec.Replicas)
	case *policyv1.Eviction:
		return "eviction(" + o.Name + ")"
	}
	return fmt.Sprintf("%T", obj)
}

func (f *fakeAdmission) Active() bool { return true }

func (f *fakeAdmission) Mutate(ctx context.Context, req *admit.Request) error {
	f.record("mutate", req)
	if _, _, err := f.c.Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	if gvk := req.Object; gvk != nil && gvk.GetObjectKind().GroupVersionKind() != req.Kind {
		return fmt.Errorf("object of kind %v, request of %v", gvk.GetObjectKind().GroupVersionKind(), req.Kind)
	}
	if f.mutate != nil {
		return f.mutate(ctx, req)
	}
	return nil
}

func (f *fakeAdmission) Validate(ctx context.Context, req *admit.Request) error {
	f.record("validate", req)
	if _, _, err := f.c.Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	if f.validate != nil {
		return f.validate(ctx, req)
	}
	return nil
}

func (f *fakeAdmission) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func newAdmittedCluster(t *testing.T) (*Cluster, *fakeAdmission) {
	t.Helper()
	f := &fakeAdmission{}
	c := New(Config{Clock: newFake(), Seed: 1, Admission: f, RequireNamespaces: true})
	f.c = c
	if _, err := c.Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.take()
	return c, f
}

func TestAdmissionCreateOrder(t *testing.T) {
	c, f := newAdmittedCluster(t)
	ctx := t.Context()
	f.mutate = func(_ context.Context, req *admit.Request) error {
		p := req.Object.(*corev1.Pod)
		p.Labels = map[string]string{"mutated": "yes"}
		return nil
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	out, err := c.Pods("default").Create(ctx, p, metav1.CreateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// Mutating: as decoded and defaulted, before the generated name.
		"mutate CREATE pods default/ kind=Pod user=tester object=pod( uid=false restart=Always labels=map[])",
		// Validating: the object about to be stored.
		"validate CREATE pods default/" + out.Name + " kind=Pod user=tester object=pod(" + out.Name + " uid=true restart=Always labels=map[mutated:yes])",
	}
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Errorf("admission calls (-want +got):\n%s", diff)
	}
	if out.Labels["mutated"] != "yes" {
		t.Errorf("stored labels %v, want the mutating stage's", out.Labels)
	}
}

func TestAdmissionDenies(t *testing.T) {
	c, f := newAdmittedCluster(t)
	ctx := t.Context()
	denied := apierrors.NewForbidden(podsGR, "web", errors.New("not today"))
	f.validate = func(context.Context, *admit.Request) error { return denied }
	_, err := c.Pods("ns").Create(ctx, pod("web", "", ""), metav1.CreateOptions{})
	if !errors.Is(err, denied) {
		t.Fatalf("create: %v, want the validating stage's error", err)
	}
	if _, err := c.Pods("ns").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the denied pod is stored: %v", err)
	}
}

var podsGR = corev1.Resource("pods")

// TestAdmissionRetriesOnChange changes the object while its update is in
// the mutating stage: an unconditional update starts over (admission
// included), one that named a resourceVersion fails with 409.
func TestAdmissionRetriesOnChange(t *testing.T) {
	c, f := newAdmittedCluster(t)
	ctx := t.Context()
	d := deployment("web")
	if _, err := c.Deployments("ns").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.take()
	interfere := 1
	f.mutate = func(ctx context.Context, req *admit.Request) error {
		if req.Resource.Resource != "deployments" || interfere == 0 {
			return nil
		}
		interfere--
		cur, err := c.Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Annotations = map[string]string{"other": "writer"}
		_, err = c.Deployments("ns").Update(ctx, cur, metav1.UpdateOptions{FieldManager: "other"})
		return err
	}
	up, err := c.Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up.Spec.Replicas = ptrTo[int32](3)
	up.ResourceVersion = ""
	out, err := c.Deployments("ns").Update(ctx, up, metav1.UpdateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
	if *out.Spec.Replicas != 3 || out.Annotations != nil {
		t.Errorf("update stored replicas %d, annotations %v; want 3 and none (the update replaces the other writer's)", *out.Spec.Replicas, out.Annotations)
	}
	var mutates int
	for _, call := range f.take() {
		if strings.HasPrefix(call, "mutate UPDATE deployments ns/web") && strings.Contains(call, "user=tester") {
			mutates++
		}
	}
	if mutates != 2 {
		t.Errorf("the update's mutating stage ran %d times, want 2 (a try, then a new one after the other write)", mutates)
	}

	interfere = 1
	cond := out.DeepCopy()
	cond.Spec.Replicas = ptrTo[int32](4)
	if _, err := c.Deployments("ns").Update(ctx, cond, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("conditional update over a change made meanwhile: %v, want Conflict", err)
	}
}

func TestAdmissionDelete(t *testing.T) {
	c, f := newAdmittedCluster(t)
	ctx := t.Context()
	if _, err := c.Pods("ns").Create(ctx, pod("web", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.take()
	f.validate = func(context.Context, *admit.Request) error {
		return apierrors.NewForbidden(podsGR, "web", errors.New("keep it"))
	}
	if err := c.Pods("ns").Delete(ctx, "web", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete: %v, want Forbidden", err)
	}
	calls := f.take()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "mutate DELETE pods ns/web kind=Pod") || strings.Contains(calls[0], "object=") ||
		!strings.Contains(calls[1], "old=pod(web uid=true") {
		t.Errorf("delete admission calls:\n%s\nwant mutate and validate of DELETE with the stored pod as the old object, no new one", strings.Join(calls, "\n"))
	}
	if _, err := c.Pods("ns").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod whose delete was denied: %v", err)
	}
}

// TestAdmissionREST sends a scale write, an eviction and a status patch
// through the REST API: admission sees the subresource, the kind written
// there, the impersonated user; its warnings come back as headers.
func TestAdmissionREST(t *testing.T) {
	c, f := newAdmittedCluster(t)
	AddBuiltinKinds(c)
	ctx := t.Context()
	if _, err := c.Deployments("ns").Create(ctx, deployment("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.take()
	f.mutate = func(ctx context.Context, req *admit.Request) error {
		admit.AddWarning(ctx, "seen by "+req.User.Name)
		if sc, ok := req.Object.(*autoscalingv1.Scale); ok {
			sc.Spec.Replicas = 5 // the mutating stage's answer wins
		}
		return nil
	}
	h := NewHandler(c)
	send := func(method, path, contentType, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Impersonate-User", "alice")
		r.Header.Add("Impersonate-Group", "admins")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	rec := send(http.MethodPut, "/apis/apps/v1/namespaces/ns/deployments/web/scale", "application/json",
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"ns"},"spec":{"replicas":2}}`)
	if got := rec.Header().Values("Warning"); !cmp.Equal(got, []string{`299 - "seen by alice"`}) {
		t.Errorf("Warning headers %q", got)
	}
	d, err := c.Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("replicas %d after the scale write, want the mutating stage's 5", *d.Spec.Replicas)
	}
	send(http.MethodPatch, "/api/v1/namespaces/ns/pods/p/status", "application/merge-patch+json",
		`{"status":{"message":"hi"}}`)
	send(http.MethodPost, "/api/v1/namespaces/ns/pods/p/eviction", "application/json",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"ns"}}`)
	want := []string{
		"mutate UPDATE deployments/scale ns/web kind=Scale user=alice object=scale(2) old=scale(1)",
		"validate UPDATE deployments/scale ns/web kind=Scale user=alice object=scale(5) old=scale(1)",
		"mutate UPDATE pods/status ns/p kind=Pod user=alice object=pod(p uid=true restart=Always labels=map[app:web]) old=pod(p uid=true restart=Always labels=map[app:web])",
		"validate UPDATE pods/status ns/p kind=Pod user=alice object=pod(p uid=true restart=Always labels=map[app:web]) old=pod(p uid=true restart=Always labels=map[app:web])",
		"mutate CREATE pods/eviction ns/p kind=Eviction user=alice object=eviction(p)",
		"validate CREATE pods/eviction ns/p kind=Eviction user=alice object=eviction(p)",
	}
	calls := f.take()
	if len(calls) < len(want) {
		t.Fatalf("admission calls:\n%s", strings.Join(calls, "\n"))
	}
	if diff := cmp.Diff(want, calls[:len(want)]); diff != "" {
		t.Errorf("admission calls (-want +got):\n%s", diff)
	}
	// The eviction deleted the pod without admission of the delete, as
	// kube-apiserver's eviction does.
	if rest := calls[len(want):]; len(rest) != 0 {
		t.Errorf("more admission calls than the scale write's and the eviction's:\n%s", strings.Join(rest, "\n"))
	}
}

// TestAdmissionPatchAndApply: a patch is an UPDATE of the patched object;
// an apply of a new object is a CREATE.
func TestAdmissionPatchAndApply(t *testing.T) {
	c, f := newAdmittedCluster(t)
	c.cfg.TypeConverter = nil
	ctx := t.Context()
	if _, err := c.Pods("ns").Create(ctx, pod("web", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.take()
	_, err := c.Pods("ns").Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{FieldManager: "patcher"})
	if err != nil {
		t.Fatal(err)
	}
	calls := f.take()
	want := "mutate UPDATE pods ns/web kind=Pod user=patcher object=pod(web uid=true restart=Always labels=map[a:b app:web]) old=pod(web uid=true restart=Always labels=map[app:web])"
	if len(calls) != 2 || calls[0] != want || !strings.HasPrefix(calls[1], "validate UPDATE pods ns/web") {
		t.Errorf("patch admission calls:\n%s\nwant first:\n%s", strings.Join(calls, "\n"), want)
	}
}
