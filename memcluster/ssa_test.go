package memcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// webApply is a complete Deployment as manager "a" applies it.
const webApply = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1
`

func apply(t *testing.T, c *Cluster, manager, patch string, force bool, sub ...string) (*appsv1.Deployment, error) {
	t.Helper()
	opts := metav1.PatchOptions{FieldManager: manager}
	if force {
		opts.Force = &force
	}
	return c.Deployments("ns").Patch(ctxT(t), "web", types.ApplyYAMLPatchType, []byte(patch), opts, sub...)
}

func mustApply(t *testing.T, c *Cluster, manager, patch string, sub ...string) *appsv1.Deployment {
	t.Helper()
	d, err := apply(t, c, manager, patch, false, sub...)
	if err != nil {
		t.Fatalf("apply by %s: %v", manager, err)
	}
	return d
}

func statusCode(err error) int32 {
	var s apierrors.APIStatus
	if !asStatus(err, &s) {
		return 0
	}
	return s.Status().Code
}

func TestApplyCreatesTheObject(t *testing.T) {
	c := newSSACluster(t)
	d := mustApply(t, c, "a", webApply)
	if d.UID == "" || d.Generation != 1 || d.ResourceVersion == "" {
		t.Errorf("created uid %q generation %d rv %q; want a created object", d.UID, d.Generation, d.ResourceVersion)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("not defaulted: %+v", d.Spec)
	}
	want := []string{`a/Apply: {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`}
	if diff := cmp.Diff(want, fieldsOf(d.ManagedFields)); diff != "" {
		t.Errorf("managedFields (-want +got):\n%s", diff)
	}
	e := d.ManagedFields[0]
	if e.APIVersion != "apps/v1" || e.FieldsType != "FieldsV1" || e.Time == nil || !e.Time.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("entry %+v; want apps/v1, FieldsV1, the cluster's time %v", e, t0)
	}
	again := mustApply(t, c, "a", webApply)
	if again.ResourceVersion != d.ResourceVersion {
		t.Errorf("the same apply again wrote version %s after %s; want no write", again.ResourceVersion, d.ResourceVersion)
	}
}

func TestApplyConflictsAndForce(t *testing.T) {
	c := newSSACluster(t)
	mustApply(t, c, "a", webApply+"  replicas: 2\n")
	replicas := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n"
	_, err := apply(t, c, "b", replicas, false)
	if statusCode(err) != http.StatusConflict {
		t.Fatalf("conflicting apply: %v; want 409", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Reason != metav1.StatusReasonConflict || st.Message != `Apply failed with 1 conflict: conflict with "a": .spec.replicas` {
		t.Errorf("conflict %s %q", st.Reason, st.Message)
	}
	wantCauses := []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "a"`, Field: ".spec.replicas"}}
	if st.Details == nil || !cmp.Equal(st.Details.Causes, wantCauses) {
		t.Errorf("causes %+v; want %+v", st.Details, wantCauses)
	}
	d, err := apply(t, c, "b", replicas, true)
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d after a forced apply of 3", *d.Spec.Replicas)
	}
	got := fieldsOf(d.ManagedFields)
	want := []string{
		`a/Apply: {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`,
		`b/Apply: {"f:spec":{"f:replicas":{}}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after force (-want +got):\n%s", diff)
	}
	// The same value from a third manager is shared, not a conflict.
	if _, err := apply(t, c, "c", replicas, false); err != nil {
		t.Errorf("applying the current value: %v", err)
	}
}

func TestApplyConflictWithAnUpdater(t *testing.T) {
	c := newSSACluster(t)
	must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "creator"}))(t)
	_, err := apply(t, c, "a", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 5, paused: true}\n", false)
	st := err.(apierrors.APIStatus).Status()
	// An Update manager is named with its API version; paused is nobody's.
	if st.Code != 409 || st.Message != `Apply failed with 1 conflict: conflict with "creator" using apps/v1: .spec.replicas` {
		t.Errorf("%d %q", st.Code, st.Message)
	}
}

func TestApplyRemovesWhatAManagerStopsApplying(t *testing.T) {
	c := newSSACluster(t)
	withLabels := strings.Replace(webApply, "  namespace: ns\n", "  namespace: ns\n  labels: {x: \"1\", z: \"2\"}\n", 1)
	mustApply(t, c, "a", withLabels)
	mustApply(t, c, "b", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {z: \"2\"}}\n")
	d := mustApply(t, c, "a", webApply)
	// x was a's alone: removed. z is b's too: kept.
	if diff := cmp.Diff(map[string]string{"z": "2"}, d.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	sidecar := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: side, image: busybox}\n"
	d = mustApply(t, c, "b", sidecar)
	if n := len(d.Spec.Template.Spec.Containers); n != 2 {
		t.Fatalf("%d containers after b applies a second one; want them merged by name", n)
	}
	d = mustApply(t, c, "b", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
	if n := len(d.Spec.Template.Spec.Containers); n != 1 || d.Spec.Template.Spec.Containers[0].Name != "app" || len(d.Labels) != 0 {
		t.Errorf("containers %v labels %v after b applies nothing; want b's container and label gone", d.Spec.Template.Spec.Containers, d.Labels)
	}
}

func TestApplyStatusSubresource(t *testing.T) {
	c := newSSACluster(t)
	_, err := apply(t, c, "ctrl", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {replicas: 1}\n", false, "status")
	if statusCode(err) != http.StatusNotFound {
		t.Errorf("status apply to a missing object: %v; want 404 (a status apply does not create)", err)
	}
	mustApply(t, c, "a", webApply)
	d := mustApply(t, c, "ctrl", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {ignored: "yes"}, annotations: {kept: "yes"}}
spec: {replicas: 7}
status:
  replicas: 2
  conditions:
  - {type: Available, status: "True"}
`, "status")
	if d.Status.Replicas != 2 || *d.Spec.Replicas != 1 || d.Labels["ignored"] != "" || d.Annotations["kept"] != "yes" {
		t.Errorf("status %d spec %d labels %v annotations %v; want the status and annotations applied, spec and labels reset",
			d.Status.Replicas, *d.Spec.Replicas, d.Labels, d.Annotations)
	}
	want := []string{
		`a/Apply: {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`,
		`ctrl/Apply/status: {"f:metadata":{"f:annotations":{"f:kept":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:status":{},"f:type":{}}},"f:replicas":{}}}`,
	}
	if diff := cmp.Diff(want, fieldsOf(d.ManagedFields)); diff != "" {
		t.Errorf("managedFields (-want +got):\n%s", diff)
	}
	_, err = apply(t, c, "other", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {replicas: 3}\n", false, "status")
	if st := err.(apierrors.APIStatus).Status(); st.Message != `Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": .status.replicas` {
		t.Errorf("status conflict: %q", st.Message)
	}
	// A spec apply leaves the status alone, and records none of it.
	d = mustApply(t, c, "a", webApply+"status: {replicas: 9}\n")
	if d.Status.Replicas != 2 || len(d.ManagedFields) != 2 {
		t.Errorf("status %d, %d entries after a spec apply with a status", d.Status.Replicas, len(d.ManagedFields))
	}
}

func TestWritesRecordUpdates(t *testing.T) {
	c := newSSACluster(t)
	fc := c.Clock().(*clock.Fake)
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "creator"}))(t)
	created := `creator/Update: {"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},` +
		`"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},` +
		`"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`
	if diff := cmp.Diff([]string{created}, fieldsOf(d.ManagedFields)); diff != "" {
		t.Errorf("after create (-want +got):\n%s", diff)
	}
	fc.Step(1500 * time.Millisecond)
	d.Labels = map[string]string{"a": "1"}
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "editor"}))(t)
	d.Labels["b"] = "2"
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "editor"}))(t)
	d.Status.Replicas = 4
	d = must(c.Deployments("ns").UpdateStatus(ctxT(t), d, metav1.UpdateOptions{FieldManager: "ctrl"}))(t)
	d = must(c.Deployments("ns").Patch(ctxT(t), "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"p":"1"}}}`), metav1.PatchOptions{FieldManager: "patcher"}))(t)
	want := []string{
		created,
		// The same manager's updates merge into one entry.
		`editor/Update: {"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}}}`,
		`patcher/Update: {"f:metadata":{"f:annotations":{".":{},"f:p":{}}}}`,
		`ctrl/Update/status: {"f:status":{"f:replicas":{}}}`,
	}
	got := fieldsOf(d.ManagedFields)
	// Entries sort by operation, time, manager: the later ones share a second.
	if diff := cmp.Diff(want[:1], got[:1]); diff != "" {
		t.Errorf("first entry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{want[3], want[1], want[2]}, got[1:]); diff != "" {
		t.Errorf("later entries (-want +got):\n%s", diff)
	}
	for _, e := range d.ManagedFields {
		want := metav1.NewTime(t0.Add(time.Second)) // the cluster's clock, whole seconds
		if e.Manager == "creator" {
			want = metav1.NewTime(t0)
		}
		if e.Time == nil || !e.Time.Equal(&want) {
			t.Errorf("%s at %v; want %v", e.Manager, e.Time, want.Time)
		}
	}
	// A write that changes nothing records nothing.
	again := must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "someone"}))(t)
	if !cmp.Equal(again.ManagedFields, d.ManagedFields) || again.ResourceVersion != d.ResourceVersion {
		t.Errorf("a no-op update changed managedFields or wrote")
	}
}

func TestUpdateManagersAreCapped(t *testing.T) {
	c := newSSACluster(t)
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "m00"}))(t)
	for i := 1; i <= 10; i++ {
		m := fmt.Sprintf("m%02d", i)
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[m] = "x" // each manager's own annotation
		d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: m}))(t)
	}
	var managers []string
	for _, e := range d.ManagedFields {
		managers = append(managers, e.Manager)
	}
	// 11 update managers: the oldest two merge into "ancient-changes".
	want := []string{"ancient-changes", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10"}
	if diff := cmp.Diff(want, managers); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
}

func TestUserSetManagedFields(t *testing.T) {
	c := newSSACluster(t)
	mustApply(t, c, "a", webApply)
	d := mustApply(t, c, "b", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n")
	// An update with its own valid list: kube-apiserver takes it.
	d.ManagedFields = d.ManagedFields[:1]
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "u"}))(t)
	if got := fieldsOf(d.ManagedFields); len(got) != 1 || !strings.HasPrefix(got[0], "a/Apply") {
		t.Errorf("after an update with a's entry only: %v", got)
	}
	// An invalid list is ignored.
	bad := d.DeepCopy()
	bad.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus"}}
	bad.Labels = map[string]string{"l": "1"}
	d = must(c.Deployments("ns").Update(ctxT(t), bad, metav1.UpdateOptions{FieldManager: "u"}))(t)
	if got := fieldsOf(d.ManagedFields); len(got) != 2 || !strings.HasPrefix(got[1], "u/Update") {
		t.Errorf("after an update with an invalid list: %v", got)
	}
	// A list of one empty entry resets them.
	d = must(c.Deployments("ns").Patch(ctxT(t), "web", types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`), metav1.PatchOptions{FieldManager: "m"}))(t)
	if len(d.ManagedFields) != 0 {
		t.Errorf("after a reset: %v", fieldsOf(d.ManagedFields))
	}
	// The next write of an object without managedFields records nothing
	// (as kube-apiserver does); the next apply records who had the rest.
	d.Labels["m"] = "1"
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "u"}))(t)
	if len(d.ManagedFields) != 0 {
		t.Errorf("an update after a reset recorded %v", fieldsOf(d.ManagedFields))
	}
	d = mustApply(t, c, "a", webApply)
	var managers []string
	for _, e := range d.ManagedFields {
		managers = append(managers, e.Manager+"/"+string(e.Operation))
	}
	if diff := cmp.Diff([]string{"a/Apply", "before-first-apply/Update"}, managers); diff != "" {
		t.Errorf("managers after the first apply (-want +got):\n%s", diff)
	}
}

func TestApplyErrors(t *testing.T) {
	c := newSSACluster(t)
	mustApply(t, c, "a", webApply)
	tests := []struct {
		name, patch string
		opts        metav1.PatchOptions
		code        int32
		message     string
	}{
		{"no field manager", webApply, metav1.PatchOptions{}, 422,
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"another version", strings.Replace(webApply, "apps/v1", "apps/v1beta2", 1), metav1.PatchOptions{FieldManager: "a"}, 400,
			"invalid object type: apps/v1beta2, Kind=Deployment"},
		{"managedFields", strings.Replace(webApply, "  name: web\n", "  name: web\n  managedFields: [{manager: x}]\n", 1), metav1.PatchOptions{FieldManager: "a"}, 400,
			"metadata.managedFields must be nil"},
		{"another name", strings.Replace(webApply, "name: web", "name: other", 1), metav1.PatchOptions{FieldManager: "a"}, 400,
			"the name of the object (other) does not match the name on the URL (web)"},
		{"another namespace", strings.Replace(webApply, "namespace: ns", "namespace: elsewhere", 1), metav1.PatchOptions{FieldManager: "a"}, 400,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"not YAML", "{", metav1.PatchOptions{FieldManager: "a"}, 400, ""},
		{"a stale resourceVersion", strings.Replace(webApply, "  name: web\n", "  name: web\n  resourceVersion: \"999\"\n", 1), metav1.PatchOptions{FieldManager: "a"}, 409,
			`Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again`},
		{"a list with duplicate keys", webApply + "      - {name: app, image: other}\n", metav1.PatchOptions{FieldManager: "a"}, 500,
			`failed to create typed patch object (ns/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="app"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Deployments("ns").Patch(ctxT(t), "web", types.ApplyYAMLPatchType, []byte(tt.patch), tt.opts)
			var s apierrors.APIStatus
			if !asStatus(err, &s) || s.Status().Code != tt.code || tt.message != "" && s.Status().Message != tt.message {
				t.Errorf("got %v; want %d %q", err, tt.code, tt.message)
			}
		})
	}
	force := true
	_, err := c.Deployments("ns").Patch(ctxT(t), "web", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{Force: &force})
	if statusCode(err) != http.StatusUnprocessableEntity {
		t.Errorf("force on a merge patch: %v; want 422", err)
	}
	_, err = c.Deployments("ns").Patch(ctxT(t), "web", types.ApplyCBORPatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "a"})
	if statusCode(err) != http.StatusUnsupportedMediaType {
		t.Errorf("a CBOR apply: %v; want 415 as kube-apiserver v1.37 answers by default", err)
	}
	long := strings.Repeat("m", 129)
	_, err = c.Deployments("ns").Update(ctxT(t), deployment("web"), metav1.UpdateOptions{FieldManager: long})
	if statusCode(err) != http.StatusUnprocessableEntity {
		t.Errorf("a 129-byte field manager: %v; want 422", err)
	}
}

func TestNoTypeInformation(t *testing.T) {
	c, _ := newTestCluster(t)
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "creator"}))(t)
	if d.ManagedFields != nil {
		t.Errorf("a cluster without a type converter recorded %v", fieldsOf(d.ManagedFields))
	}
	_, err := apply(t, c, "a", webApply, false)
	st := err.(apierrors.APIStatus).Status()
	if st.Code != http.StatusUnsupportedMediaType || !strings.Contains(st.Message, "Config.TypeConverter") {
		t.Errorf("apply without type information: %d %q; want a 415 saying how to give it", st.Code, st.Message)
	}
	// A converter without the kind's type: the kind is not tracked.
	c2 := New(Config{Clock: newFake(), TypeConverter: testTypeConverter(t)})
	widgets := addWidgets(t, c2)
	w := must(widgets.Namespace("ns").Create(ctxT(t), &widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}))(t)
	if w.ManagedFields != nil {
		t.Errorf("a kind the converter has no type for recorded %v", fieldsOf(w.ManagedFields))
	}
	_, err = widgets.Namespace("ns").Patch(ctxT(t), "w", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`), metav1.PatchOptions{FieldManager: "a"})
	st = err.(apierrors.APIStatus).Status()
	if st.Code != http.StatusUnsupportedMediaType || !strings.Contains(st.Message, "Kind.TypeConverter") {
		t.Errorf("apply to an untyped kind: %d %q", st.Code, st.Message)
	}
}

func TestCustomResourceWithDeducedTypes(t *testing.T) {
	c := New(Config{Clock: newFake(), TypeConverter: TypeConverterChain(testTypeConverter(t), managedfields.NewDeducedTypeConverter())})
	widgets := addWidgets(t, c).Namespace("ns")
	patch := func(manager, body string, sub ...string) (*widget, error) {
		return widgets.Patch(ctxT(t), "w", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},`+body+`}`),
			metav1.PatchOptions{FieldManager: manager}, sub...)
	}
	w, err := patch("a", `"spec":{"size":2,"tags":["x"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if w.Spec.Size != 2 || w.Generation != 1 {
		t.Errorf("created %+v generation %d", w.Spec, w.Generation)
	}
	// Deduced types: lists are atomic, so b's tags replace a's, by force.
	if _, err := patch("b", `"spec":{"tags":["y"]}`); statusCode(err) != http.StatusConflict {
		t.Errorf("a conflicting atomic list: %v; want 409", err)
	}
	// A custom resource's status subresource resets all but the status.
	w, err = patch("ctrl", `"metadata":{"labels":{"x":"1"}},"spec":{"size":9},"status":{"ready":true}`, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Status.Ready || w.Spec.Size != 2 || len(w.Labels) != 0 {
		t.Errorf("after a status apply: %+v %+v labels %v", w.Spec, w.Status, w.Labels)
	}
	want := []string{
		`a/Apply: {"f:spec":{".":{},"f:size":{},"f:tags":{}}}`,
		`ctrl/Apply/status: {"f:status":{".":{},"f:ready":{}}}`,
	}
	if diff := cmp.Diff(want, fieldsOf(w.ManagedFields)); diff != "" {
		t.Errorf("managedFields (-want +got):\n%s", diff)
	}
	// Strategic merge patches stay refused (415), apply is not.
	if _, err := widgets.Patch(ctxT(t), "w", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}); statusCode(err) != http.StatusUnsupportedMediaType {
		t.Errorf("a strategic merge patch of a custom resource: %v", err)
	}
}

func TestBuiltinWritersAreNamed(t *testing.T) {
	c := newSSACluster(t)
	k := NewKubelet(c, KubeletConfig{})
	cc := ControllerClient{Cluster: c}
	rs := must(cc.CreateReplicaSet(ctxT(t), replicaSet("web", nil)))(t)
	p := pod("web-1", rs.Name, rs.UID)
	p = must(cc.CreatePod(ctxT(t), p))(t)
	k.Sync()
	got := must(c.Pods("ns").Get(ctxT(t), p.Name, metav1.GetOptions{}))(t)
	var managers []string
	for _, e := range got.ManagedFields {
		managers = append(managers, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	if diff := cmp.Diff([]string{"kube-controller-manager/Update/", "kubelet/Update/status"}, managers); diff != "" {
		t.Errorf("pod managers (-want +got):\n%s", diff)
	}
	if m := got.ManagedFields[1]; !strings.Contains(string(m.FieldsV1.Raw), `"f:status"`) || strings.Contains(string(m.FieldsV1.Raw), "nodeName") {
		t.Errorf("the kubelet's entry %s; want its status fields (its spec.nodeName is reset)", m.FieldsV1.Raw)
	}
	if m := rs.ManagedFields; len(m) != 1 || m[0].Manager != "kube-controller-manager" {
		t.Errorf("ReplicaSet managers %v", fieldsOf(m))
	}
}

func TestApplyThroughTheHandler(t *testing.T) {
	c := newSSACluster(t)
	h := &http.Client{Transport: Transport{Handler: NewHandler(c)}}
	do := func(method, path, ct, ua, body string) (int, map[string]any) {
		t.Helper()
		r, err := http.NewRequestWithContext(t.Context(), method, "http://memcluster"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", ct)
		r.Header.Set("User-Agent", ua)
		resp, err := h.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return resp.StatusCode, m
	}
	managers := func(m map[string]any) []string {
		var out []string
		for _, e := range m["metadata"].(map[string]any)["managedFields"].([]any) {
			e := e.(map[string]any)
			s := e["manager"].(string) + "/" + e["operation"].(string)
			if sub, ok := e["subresource"].(string); ok {
				s += "/" + sub
			}
			out = append(out, s)
		}
		return out
	}
	web := "/apis/apps/v1/namespaces/ns/deployments/web"
	const applyCT = "application/apply-patch+yaml"
	if code, m := do("PATCH", web, applyCT, "kubectl/v1.37.1", webApply); code != http.StatusUnprocessableEntity {
		t.Errorf("apply without fieldManager: %d %v; want 422 (the User-Agent does not name an applier)", code, m["message"])
	}
	code, m := do("PATCH", web+"?fieldManager=a", applyCT, "x", webApply)
	if code != http.StatusCreated || m["kind"] != "Deployment" {
		t.Errorf("apply creating: %d %v", code, m)
	}
	if code, _ := do("PATCH", web+"?fieldManager=a", applyCT, "x", webApply); code != http.StatusOK {
		t.Errorf("apply again: %d; want 200", code)
	}
	code, m = do("PATCH", web+"?fieldManager=b", applyCT, "x", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: app, image: other}\n")
	wantConflict := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "code": 409.0, "reason": "Conflict",
		"message": `Apply failed with 1 conflict: conflict with "a": .spec.template.spec.containers[name="app"].image`,
		"details": map[string]any{"causes": []any{map[string]any{"reason": "FieldManagerConflict", "message": `conflict with "a"`, "field": `.spec.template.spec.containers[name="app"].image`}}}}
	if diff := cmp.Diff(wantConflict, m); code != http.StatusConflict || diff != "" {
		t.Errorf("conflict %d (-want +got):\n%s", code, diff)
	}
	// Other writes: the fieldManager parameter, else the User-Agent's prefix.
	do("PATCH", web, "application/merge-patch+json", "my-operator/v0.1 (linux/amd64)", `{"metadata":{"labels":{"x":"1"}}}`)
	do("PATCH", web+"/status", "application/merge-patch+json", "", `{"status":{"replicas":1}}`)
	code, m = do("PATCH", web+"/status?fieldManager=ctrl", applyCT, "x", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {readyReplicas: 1}\n")
	if code != http.StatusOK {
		t.Fatalf("status apply: %d %v", code, m)
	}
	want := []string{"a/Apply", "ctrl/Apply/status", "my-operator/Update", "unknown/Update/status"}
	if diff := cmp.Diff(want, managers(m)); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
	if code, m := do("PATCH", web+"?fieldManager=a", "application/apply-patch+cbor", "x", webApply); code != http.StatusUnsupportedMediaType || m["message"] != "415: Unsupported Media Type" {
		t.Errorf("a CBOR apply: %d %v", code, m["message"])
	}
	if code, m := do("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=%01", "application/json", "x", `{"metadata":{"name":"c"}}`); code != http.StatusUnprocessableEntity {
		t.Errorf("an unprintable fieldManager: %d %v", code, m["message"])
	}
	code, m = do("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=maker", "application/json", "x", `{"metadata":{"name":"c"},"data":{"k":"v"}}`)
	if code != http.StatusCreated || !cmp.Equal(managers(m), []string{"maker/Update"}) {
		t.Errorf("create with fieldManager: %d %v", code, m)
	}
	code, m = do("PUT", "/api/v1/namespaces/ns/configmaps/c", "application/json", "editor/1.0", `{"metadata":{"name":"c"},"data":{"k":"w"}}`)
	// maker keeps the data map itself ("."), not the key editor changed.
	if code != http.StatusOK || !cmp.Equal(managers(m), []string{"editor/Update", "maker/Update"}) {
		t.Errorf("update by User-Agent: %d %v", code, managers(m))
	}
}

func TestTypedClientManagerDefaultsToTheProgram(t *testing.T) {
	c := newSSACluster(t)
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{}))(t)
	if got, want := d.ManagedFields[0].Manager, programName(); got != want || want == "" || strings.Contains(want, "/") {
		t.Errorf("manager %q; want the program's name %q", got, want)
	}
	if got := userAgentManager("kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:deployment-controller"); got != "kube-controller-manager" {
		t.Errorf("userAgentManager: %q", got)
	}
	if got := userAgentManager(strings.Repeat("é", 100) + "/x"); len(got) != 128 {
		t.Errorf("userAgentManager of a long agent: %d bytes; want 128", len(got))
	}
}

func TestScaleSubresourceRecords(t *testing.T) {
	c := newSSACluster(t)
	mustApply(t, c, "a", webApply+"  replicas: 2\n")
	rc := newRESTClient(t, c)
	scale := "/apis/apps/v1/namespaces/ns/deployments/web/scale"
	send := func(method, query, ct, body string) (int, string) {
		t.Helper()
		resp, b := rc.do(req{method: method, path: scale + query, contentType: ct, body: body})
		return resp.StatusCode, string(b)
	}
	const applyScale = "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: web}\nspec: {replicas: 3}\n"
	if code, body := send("PATCH", "?fieldManager=hpa", "application/apply-patch+yaml", applyScale); code != http.StatusConflict ||
		!strings.Contains(body, `Apply failed with 1 conflict: conflict with \"a\": .spec.replicas`) {
		t.Errorf("a conflicting scale apply: %d %s", code, body)
	}
	if code, body := send("PATCH", "?fieldManager=hpa&force=true", "application/apply-patch+yaml", applyScale); code != http.StatusOK {
		t.Fatalf("a forced scale apply: %d %s", code, body)
	}
	if code, body := send("PATCH", "?fieldManager=kubectl", "application/merge-patch+json", `{"spec":{"replicas":4}}`); code != http.StatusOK {
		t.Fatalf("a scale patch: %d %s", code, body)
	}
	d := must(c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	want := []string{
		`a/Apply: {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`,
		`kubectl/Update/scale: {"f:spec":{"f:replicas":{}}}`,
	}
	if diff := cmp.Diff(want, fieldsOf(d.ManagedFields)); diff != "" || *d.Spec.Replicas != 4 {
		t.Errorf("replicas %d, managedFields (-want +got):\n%s", *d.Spec.Replicas, diff)
	}
	for _, e := range d.ManagedFields {
		if (e.Subresource == "scale") != (e.Time == nil) {
			t.Errorf("%s/%s at %v; want no time exactly for the scale's entries, as kube-apiserver records them", e.Manager, e.Subresource, e.Time)
		}
	}
	if code, _ := send("PATCH", "?fieldManager=hpa", "application/apply-patch+yaml", webApply); code != http.StatusBadRequest {
		t.Errorf("an apply of a Deployment to the scale: %d; want 400", code)
	}
}

func TestUpdateWithAnEmptyListOverREST(t *testing.T) {
	c := newSSACluster(t)
	rc := newRESTClient(t, c)
	cm := "/api/v1/namespaces/ns/configmaps"
	if resp, b := rc.do(req{method: "POST", path: cm + "?fieldManager=maker", body: `{"metadata":{"name":"c"},"data":{"k":"v"}}`}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	// JSON's empty list clears managedFields, as kube-apiserver decodes it.
	resp, b := rc.do(req{method: "PUT", path: cm + "/c?fieldManager=u", body: `{"metadata":{"name":"c","managedFields":[]},"data":{"k":"v"}}`})
	var got corev1.ConfigMap
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK || got.ManagedFields != nil {
		t.Errorf("update with managedFields []: %d %v %s", resp.StatusCode, err, b)
	}
	// A Go client's empty list is encoded as no list (omitempty): a
	// typed Client's keeps the record, as it would on a real cluster.
	d := must(c.Deployments("ns").Create(ctxT(t), deployment("web"), metav1.CreateOptions{FieldManager: "maker"}))(t)
	d.ManagedFields = []metav1.ManagedFieldsEntry{}
	d.Labels = map[string]string{"l": "1"}
	d = must(c.Deployments("ns").Update(ctxT(t), d, metav1.UpdateOptions{FieldManager: "u"}))(t)
	if len(d.ManagedFields) != 2 {
		t.Errorf("a typed update with an empty list: %v; want maker's and u's entries", fieldsOf(d.ManagedFields))
	}
}

func TestScaleOfUnownedReplicas(t *testing.T) {
	// Applied without replicas (defaulted to 1, and nobody's), as
	// GitOps tools apply what an autoscaler scales: kube-apiserver's Scale
	// then has no managedFields.
	c := newSSACluster(t)
	mustApply(t, c, "a", webApply)
	rc := newRESTClient(t, c)
	scale := "/apis/apps/v1/namespaces/ns/deployments/web/scale"
	send := func(method, query, ct, body string) (int, string) {
		t.Helper()
		resp, b := rc.do(req{method: method, path: scale + query, contentType: ct, body: body})
		return resp.StatusCode, string(b)
	}
	applied := `a/Apply: {"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
	// An update of the scale is then not recorded.
	if code, body := send("PATCH", "?fieldManager=hpa", "application/merge-patch+json", `{"spec":{"replicas":3}}`); code != http.StatusOK {
		t.Fatalf("a scale patch: %d %s", code, body)
	}
	d := must(c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]string{applied}, fieldsOf(d.ManagedFields)); diff != "" || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, managedFields after a scale update (-want +got):\n%s", *d.Spec.Replicas, diff)
	}
	// An apply first gives its replicas to "before-first-apply", and so
	// conflicts with it, named with the Scale's version.
	const applyScale = "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: web}\nspec: {replicas: 4}\n"
	if code, body := send("PATCH", "?fieldManager=hpa", "application/apply-patch+yaml", applyScale); code != http.StatusConflict ||
		!strings.Contains(body, `conflict with \"before-first-apply\" with subresource \"scale\" using autoscaling/v1: .spec.replicas`) {
		t.Errorf("a scale apply: %d %s; want a conflict with before-first-apply", code, body)
	}
	if code, body := send("PATCH", "?fieldManager=hpa", "application/apply-patch+yaml", strings.Replace(applyScale, "4", "3", 1)); code != http.StatusOK {
		t.Fatalf("a scale apply of the same replicas: %d %s", code, body)
	}
	d = must(c.Deployments("ns").Get(ctxT(t), "web", metav1.GetOptions{}))(t)
	// (Sorted by operation, then time: the scale's entries have none.)
	want := []string{`hpa/Apply/scale: {"f:spec":{"f:replicas":{}}}`, applied, `before-first-apply/Update/scale: {"f:spec":{"f:replicas":{}}}`}
	if diff := cmp.Diff(want, fieldsOf(d.ManagedFields)); diff != "" {
		t.Errorf("managedFields after a scale apply of the same replicas (-want +got):\n%s", diff)
	}
}
