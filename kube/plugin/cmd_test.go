package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// execute runs the command line against a fake clientset holding w's
// objects and returns the exit code, stdout and stderr.
func execute(t *testing.T, cs *fake.Clientset, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(context.Background(), args, Env{
		Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		Now:     func() time.Time { return now }, Client: cs, Namespace: "shop",
	})
	return code, out.String(), errb.String()
}

func (w *world) clientset() *fake.Clientset {
	w.settle()
	objs := []runtime.Object{w.d, w.old, w.new}
	for _, p := range w.pods {
		objs = append(objs, p)
	}
	return fake.NewClientset(objs...)
}

// complete is web rolled out to nginx:2 (3 replicas, all available).
func complete() *world {
	w := newWorld(3, 0, 3, "nginx:2")
	for i := range 3 {
		w.pod(w.new, i, readyFor(time.Hour))
	}
	w.settle()
	w.d.Status.Conditions[0].Reason = "NewReplicaSetAvailable"
	return w
}

func TestExecuteWhy(t *testing.T) {
	cs := stuckImage().clientset()
	code, out, errOut := execute(t, cs, "why", "deploy/web")
	if code != ExitStuck || !strings.Contains(out, "STUCK") || errOut != "" {
		t.Errorf("why = %d, stdout:\n%s\nstderr: %s; want exit 1 and STUCK", code, out, errOut)
	}
	code, out, _ = execute(t, cs, "why", "deployment.apps/web", "-o", "json")
	var r WhyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitStuck {
		t.Fatalf("why -o json = %d, %v:\n%s", code, err, out)
	}
	if r.State != Stuck || len(r.Causes) != 1 || r.Causes[0].Code != ImagePullBackOff || len(r.Causes[0].Objects) != 2 {
		t.Errorf("why -o json: %+v", r)
	}
	code, out, _ = execute(t, cs, "why", "web", "-o", "yaml")
	if code != ExitStuck || !strings.Contains(out, "state: Stuck\n") || !strings.Contains(out, "code: ImagePullBackOff\n") {
		t.Errorf("why -o yaml = %d:\n%s", code, out)
	}
	code, out, _ = execute(t, complete().clientset(), "why", "deploy/web")
	if code != ExitOK || !strings.HasPrefix(out, "deployment/web in shop: complete\n") {
		t.Errorf("why on a complete rollout = %d:\n%s", code, out)
	}
}

func TestExecuteErrors(t *testing.T) {
	forbidden := stuckImage().clientset()
	forbidden.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errString(`User "dev" cannot list resource "pods" in API group "" in the namespace "shop"`))
	})
	tests := []struct {
		name string
		cs   *fake.Clientset
		args []string
		want string
	}{
		{"missing deployment", stuckImage().clientset(), []string{"why", "deploy/nope"}, `error: deployments.apps "nope" not found in namespace "shop"`},
		{"other namespace", stuckImage().clientset(), []string{"why", "deploy/web", "-n", "prod"}, `error: deployments.apps "web" not found in namespace "prod"`},
		{"no permission", forbidden, []string{"why", "deploy/web"}, `error: no permission to list pods in namespace "shop": `},
		{"not a deployment", stuckImage().clientset(), []string{"why", "sts/web"}, `only Deployments are supported`},
		{"bad output", stuckImage().clientset(), []string{"history", "deploy/web", "-o", "wide-json"}, `unknown output format "wide-json"`},
		{"image and file", stuckImage().clientset(), []string{"plan", "deploy/web", "--image", "x", "-f", "y.yaml"}, `--image and -f exclude each other`},
		{"unknown container", stuckImage().clientset(), []string{"plan", "deploy/web", "--image", "sidecar=x:1"}, `the pod template has no container "sidecar"`},
		{"no argument", stuckImage().clientset(), []string{"why"}, `accepts 1 arg(s), received 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.cs, tt.args...)
			if code != ExitError || !strings.Contains(errOut, tt.want) || out != "" {
				t.Errorf("%q = exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestExecuteUnreachable builds a real client from the flags: a server
// nobody listens on is reported as such, with exit code 2.
func TestExecuteUnreachable(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: shop}}]
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Execute(context.Background(), []string{"why", "deploy/web", "--kubeconfig", kubeconfig},
		Env{Streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errb}})
	if code != ExitError || !strings.Contains(errb.String(), "error: cannot reach the API server https://127.0.0.1:1: ") {
		t.Errorf("exit %d, stderr %q; want 2 and 'cannot reach the API server'", code, errb.String())
	}
}

func TestExecuteHistory(t *testing.T) {
	w := stuckImage()
	w.new.Annotations["kubernetes.io/change-cause"] = "kubectl set image deploy/web app=nginx:nope"
	code, out, _ := execute(t, w.clientset(), "history", "deploy/web")
	for _, want := range []string{
		"REVISION", "2 (current)", "nginx:nope", "kubectl set image deploy/web app=nginx:nope", "<none>",
		"revision 2 (" + w.new.Name + ") changed:\n  spec.containers[app].image: \"nginx:1\" → \"nginx:nope\"\n",
	} {
		if !strings.Contains(out, want) || code != ExitOK {
			t.Errorf("history = %d, output lacks %q:\n%s", code, want, out)
		}
	}
}

func TestExecutePlan(t *testing.T) {
	code, out, errOut := execute(t, complete().clientset(), "plan", "deploy/web", "--image", "nginx:3")
	for _, want := range []string{"plan of image of app: nginx:2 → nginx:3", "measured on 3 ready live pods", "predicted: complete after 6s", "invariants: 0 violations"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("plan = %d (stderr %q), output lacks %q:\n%s", code, errOut, want, out)
		}
	}
	// The stuck rollout planned as it is: its new pods fail to pull, the
	// plan stalls (exit 1) and says so.
	code, out, _ = execute(t, stuckImage().clientset(), "plan", "deploy/web", "-o", "json")
	var r PlanReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if code != ExitStuck || r.Complete || r.Model.BadImage != 1 || len(r.Stall) == 0 {
		t.Errorf("plan of a stuck rollout = %d: complete %t, model %+v, stall %+v", code, r.Complete, r.Model, r.Stall)
	}
	// -f: a changed manifest (replicas 6, a new image).
	path := filepath.Join(t.TempDir(), "web.yaml")
	manifest := `apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: nginx:4}]
`
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = execute(t, complete().clientset(), "plan", "deploy/web", "-f", path, "-o", "json")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("plan -f = %d, %v; stderr %s", code, err, errOut)
	}
	last := r.Steps[len(r.Steps)-1]
	if code != ExitOK || !r.Complete || last.Available != 6 || r.MaxPods != 8 {
		t.Errorf("plan -f: exit %d, complete %t, last step %+v, maxPods %d", code, r.Complete, last, r.MaxPods)
	}
}

// TestFetchControllerFacts: Fetch reads the Deployment's own events (Normal
// ones too), the autoscalers that target it and, when its generation is
// not observed, the leader Leases; why reports them through the command.
func TestFetchControllerFacts(t *testing.T) {
	w, st := fightWorld()
	objs := []runtime.Object{w.d, w.old, w.new, st.Autoscalers[0]}
	for _, p := range w.pods {
		objs = append(objs, p)
	}
	for _, e := range st.Events {
		objs = append(objs, e)
	}
	other := st.Autoscalers[0].DeepCopy()
	other.Name, other.Spec.ScaleTargetRef.Name = "api", "api"
	objs = append(objs, other)
	cs := fake.NewClientset(objs...)
	got, err := Fetch(context.Background(), cs, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Autoscalers) != 1 || got.Autoscalers[0].Name != "web" || len(got.Events) != 2 || len(got.Leases) != 0 {
		t.Errorf("autoscalers %d, events %d, leases %d; want 1 (web), 2 and none (generation observed)", len(got.Autoscalers), len(got.Events), len(got.Leases))
	}
	code, out, _ := execute(t, cs, "why", "deploy/web", "--observe", "0") // TestFetchWatchesAFight watches
	if code != ExitStuck || !strings.Contains(out, "SpecFight: spec.replicas keeps changing") {
		t.Errorf("why = %d:\n%s", code, out)
	}

	w, _ = unobserved(4 * time.Minute)
	renewed := metav1.NewMicroTime(now.Add(-time.Minute))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ctrl", Namespace: "ops"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("host_1"), LeaseDurationSeconds: ptr(int32(15)), RenewTime: &renewed}}
	cs = w.clientset()
	if err := cs.Tracker().Add(lease); err != nil {
		t.Fatal(err)
	}
	code, out, _ = execute(t, cs, "why", "deploy/web", "--controller-lease", "ops/ctrl", "--controller-lease", "kube-system/kube-controller-manager")
	for _, want := range []string{"ControllerNotObserving: no Deployment controller has acted on generation 3 for 4m0s",
		"lease ops/ctrl: held by host_1, last renewed 1m0s ago: its 15s lease expired 45s ago",
		`lease kube-system/kube-controller-manager: leases.coordination.k8s.io "kube-controller-manager" not found in namespace "kube-system"`} {
		if code != ExitStuck || !strings.Contains(out, want) {
			t.Errorf("why = %d, output lacks %q:\n%s", code, want, out)
		}
	}
	code, _, errOut := execute(t, cs, "why", "deploy/web", "--controller-lease", "nope")
	if code != ExitError || !strings.Contains(errOut, `lease "nope": want namespace/name`) {
		t.Errorf("bad lease = %d, %q", code, errOut)
	}
	code, out, _ = execute(t, cs, "plan", "deploy/web", "--unobserved-after", "5m")
	if code != ExitOK || !strings.Contains(out, "predicted: complete after") {
		t.Errorf("plan under the threshold = %d:\n%s", code, out)
	}
	code, out, _ = execute(t, cs, "plan", "deploy/web")
	if code != ExitStuck || !strings.Contains(out, "does NOT complete as things stand") {
		t.Errorf("plan = %d:\n%s", code, out)
	}
}

// TestFetchWatchesAFight: while spec.replicas flips, Fetch watches the
// Deployment and records who sets it, until it has seen two writers.
func TestFetchWatchesAFight(t *testing.T) {
	w, st := fightWorld()
	st.Autoscalers = nil
	cs := w.clientset()
	for _, e := range st.Events {
		if err := cs.Tracker().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	fw := watch.NewFake()
	watching := make(chan string, 1)
	cs.PrependWatchReactor("deployments", func(a k8stesting.Action) (bool, watch.Interface, error) {
		watching <- a.(k8stesting.WatchActionImpl).GetWatchRestrictions().Fields.String()
		return true, fw, nil
	})
	write := func(n int32, manager, sub string, ago time.Duration) *appsv1.Deployment {
		d := w.d.DeepCopy()
		d.Spec.Replicas = &n
		d.ManagedFields = []metav1.ManagedFieldsEntry{mf(manager, metav1.ManagedFieldsOperationUpdate, sub, ago, fieldsReplicas),
			mf("kubectl-set", metav1.ManagedFieldsOperationUpdate, "", time.Hour, fieldsTemplate)}
		return d
	}
	go func() {
		if sel := <-watching; sel != "metadata.name=web" {
			t.Errorf("watch selector %q; want metadata.name=web", sel)
		}
		fw.Modify(write(3, "argocd-application-controller", "", 3*time.Second)) // the same value: not a change
		fw.Modify(write(6, "scaler", "scale", 2*time.Second))
		fw.Modify(write(3, "argocd-application-controller", "", time.Second))
	}()
	got, err := FetchWith(context.Background(), cs, "shop", "web", FetchOptions{Observe: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	want := []ReplicasWrite{{At: now.Add(-2 * time.Second), Replicas: 6, Owners: []string{"scaler (/scale)"}},
		{At: now.Add(-time.Second), Replicas: 3, Owners: []string{"argocd-application-controller"}}}
	if diff := cmp.Diff(want, got.ReplicasWrites); diff != "" {
		t.Errorf("ReplicasWrites mismatch (-want +got):\n%s", diff)
	}
	r := Why(got, now, Thresholds{})
	if len(r.Causes) == 0 || !strings.Contains(r.Causes[0].Message, "scaler (/scale) (a second controller or a script), seen setting it to 6 (once)") {
		t.Errorf("why does not name the watched writer: %+v", r.Causes)
	}
}
