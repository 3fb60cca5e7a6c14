package crd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/testsupport"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// env is a memcluster serving CRDs, with clients of its REST API.
type env struct {
	c   *memcluster.Cluster
	s   *Server
	cfg *rest.Config
	cl  client.Client // controller-runtime's, with the apiextensions types
	dyn *dynamic.DynamicClient
}

func newEnv(t *testing.T) env {
	t.Helper()
	c := memcluster.New(memcluster.Config{Seed: 1})
	s, err := Serve(c)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testsupport.MemclusterConfig(memcluster.NewHandler(c))
	sch := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env{c: c, s: s, cfg: cfg, cl: cl, dyn: dyn}
}

func loadOne(t *testing.T, file string) *CRD {
	t.Helper()
	ms, err := Load(file)
	if err != nil || len(ms) != 1 {
		t.Fatalf("Load(%s) = %d manifests, %v; want one", file, len(ms), err)
	}
	return ms[0].CRD
}

func webApp(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

var webApps = schema.GroupVersionResource{Group: "apps.example.com", Version: "v1", Resource: "webapps"}

// TestCreateThroughTheAPI creates a CRD with controller-runtime's client,
// as envtest installs them, and checks what kube-apiserver's controllers
// would have made of it by the next read.
func TestCreateThroughTheAPI(t *testing.T) {
	e := newEnv(t)
	in := loadOne(t, "testdata/crds/webapps.yaml")
	if err := e.cl.Create(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if len(in.Status.Conditions) != 0 || !cmp.Equal(in.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("the create's answer: status %+v; want no conditions yet and storedVersions [v1]", in.Status)
	}
	got := &CRD{}
	if err := e.cl.Get(t.Context(), client.ObjectKey{Name: in.Name}, got); err != nil {
		t.Fatal(err)
	}
	var conds []string
	for _, c := range got.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	want := []string{`NamesAccepted=True NoConflicts "no conflicts found"`, `Established=True InitialNamesAccepted "the initial names have been accepted"`}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("conditions mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.Spec.Names, got.Status.AcceptedNames); diff != "" {
		t.Errorf("acceptedNames mismatch (-want +got):\n%s", diff)
	}
	if got.Spec.Conversion == nil || got.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("spec.conversion = %+v; want the default strategy None", got.Spec.Conversion)
	}
	// The kind is served at once, and discoverable.
	res, err := e.cl.RESTMapper().RESTMapping(schema.GroupKind{Group: "apps.example.com", Kind: "WebApp"})
	if err != nil || res.Resource != webApps {
		t.Fatalf("RESTMapping(WebApp) = %v, %v", res, err)
	}
}

// TestCRDValidation checks that a CRD kube-apiserver refuses is refused
// with its message.
func TestCRDValidation(t *testing.T) {
	e := newEnv(t)
	crd := loadOne(t, "testdata/crds/webapps.yaml")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = apiextensionsv1.JSONSchemaProps{
		Type: "integer", Maximum: ptr(3.0), Default: &apiextensionsv1.JSON{Raw: []byte("5")}}
	crd.Spec.Versions[0].Storage = false
	err := e.cl.Create(t.Context(), crd)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create = %v; want Invalid", err)
	}
	for _, part := range []string{
		`CustomResourceDefinition.apiextensions.k8s.io "webapps.apps.example.com" is invalid: [spec.versions: Invalid value: `,
		"must have exactly one version marked as storage version",
		"spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: 5:  in body should be less than or equal to 3",
	} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("create = %v; want it to say %q", err, part)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// notChecked ends the message of errors that keep CEL rules from running.
const notChecked = ", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"

// TestCustomResources creates custom resources through controller-runtime's
// client and the dynamic client, and checks kube-apiserver's answers: the
// messages and field paths are apiextensions-apiserver's own.
func TestCustomResources(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    map[string]any
		wantErr string
		want    map[string]any // the spec as stored
	}{
		{name: "defaults", spec: map[string]any{"image": "nginx"}, want: map[string]any{"image": "nginx", "size": int64(1), "tier": "frontend"}},
		{name: "pruned", spec: map[string]any{"image": "nginx", "junk": true, "config": map[string]any{"kept": int64(1)}},
			want: map[string]any{"image": "nginx", "size": int64(1), "tier": "frontend", "config": map[string]any{"kept": int64(1)}}},
		{name: "int-or-string", spec: map[string]any{"image": "nginx", "port": "http"}, want: map[string]any{"image": "nginx", "size": int64(1), "tier": "frontend", "port": "http"}},
		{name: "maximum", spec: map[string]any{"image": "nginx", "size": int64(5)},
			wantErr: `WebApp.apps.example.com "maximum" is invalid: spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3`},
		{name: "enum", spec: map[string]any{"image": "nginx", "tier": "middle"},
			wantErr: `WebApp.apps.example.com "enum" is invalid: [spec.tier: Unsupported value: "middle": supported values: "frontend", "backend"` + notChecked},
		{name: "pattern", spec: map[string]any{"image": "Nginx!"},
			wantErr: `WebApp.apps.example.com "pattern" is invalid: spec.image: Invalid value: "Nginx!": spec.image in body should match '^[a-z0-9./:-]+$'`},
		{name: "required", spec: map[string]any{"size": int64(1)},
			wantErr: `WebApp.apps.example.com "required" is invalid: [spec.image: Required value` + notChecked},
		{name: "cel", spec: map[string]any{"image": "nginx", "size": int64(1), "minReady": int64(2)},
			wantErr: `WebApp.apps.example.com "cel" is invalid: spec.minReady: Invalid value: minReady may not exceed size`},
		{name: "list-map", spec: map[string]any{"image": "nginx", "env": []any{map[string]any{"name": "A"}, map[string]any{"name": "A"}}},
			wantErr: `WebApp.apps.example.com "list-map" is invalid: spec.env[1]: Duplicate value: {"name":"A"}`},
		{name: "embedded", spec: map[string]any{"image": "nginx", "template": map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}},
			wantErr: `WebApp.apps.example.com "embedded" is invalid: [spec.template.kind: Required value` + notChecked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The same object through both clients: the same answer.
			for _, via := range []string{"controller-runtime", "dynamic"} {
				obj := webApp(tt.name+"-"+via, tt.spec)
				var err error
				var got *unstructured.Unstructured
				if via == "dynamic" {
					got, err = e.dyn.Resource(webApps).Namespace("default").Create(t.Context(), obj, metav1.CreateOptions{})
				} else {
					err, got = e.cl.Create(t.Context(), obj), obj
				}
				if tt.wantErr != "" {
					want := strings.Replace(tt.wantErr, `"`+tt.name+`"`, `"`+tt.name+"-"+via+`"`, 1)
					if err == nil || err.Error() != want {
						t.Errorf("%s: create = %v; want %s", via, err, want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", via, err)
				}
				if diff := cmp.Diff(tt.want, got.Object["spec"]); diff != "" {
					t.Errorf("%s: spec mismatch (-want +got):\n%s", via, diff)
				}
			}
		})
	}
}

// TestUpdatesAndStatus checks transition rules, the status subresource and
// the scale subresource of a custom resource.
func TestUpdatesAndStatus(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	obj := webApp("web", map[string]any{"image": "nginx", "pinned": true})
	if err := e.cl.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	patch := func(body string, sub ...string) error {
		_, err := e.dyn.Resource(webApps).Namespace("default").Patch(ctx, "web", types.MergePatchType, []byte(body), metav1.PatchOptions{}, sub...)
		return err
	}
	if err := patch(`{"spec":{"image":"httpd"}}`); err == nil || !strings.Contains(err.Error(), "image is pinned to nginx") {
		t.Errorf("changing a pinned image: %v; want the rule's messageExpression", err)
	}
	if err := patch(`{"status":{"phase":"Lost"}}`, "status"); err == nil || !strings.Contains(err.Error(), `status.phase: Unsupported value: "Lost"`) {
		t.Errorf("a bad status: %v", err)
	}
	if err := patch(`{"status":{"phase":"Running","readyReplicas":1,"selector":"app=web"},"spec":{"size":3}}`, "status"); err != nil {
		t.Fatalf("a good status: %v", err)
	}
	scale, err := e.dyn.Resource(webApps).Namespace("default").Get(ctx, "web", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(scale.Object["spec"], scale.Object["status"]); got != "map[replicas:1] map[replicas:1 selector:app=web]" {
		t.Errorf("scale = %s; want the status write to have left spec.size at 1", got)
	}
	if err := patch(`{"spec":{"replicas":4}}`, "scale"); err == nil || !strings.Contains(err.Error(), "spec.size in body should be less than or equal to 3") {
		t.Errorf("scaling past the schema's maximum: %v", err)
	}
}

// TestNamesConflict installs two CRDs of one group with the same kind: the
// second's names are not accepted, with the naming controller's reason.
func TestNamesConflict(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	other := loadOne(t, "testdata/crds/webapps.yaml")
	other.Name, other.Spec.Names.Plural, other.Spec.Names.Singular, other.Spec.Names.ShortNames = "webapps2.apps.example.com", "webapps2", "webapp2", nil
	err := e.s.Install(t.Context(), other)
	if err == nil || !strings.Contains(err.Error(), `names not accepted (ListKindConflict): "WebAppList" is already in use`) {
		t.Fatalf("Install = %v; want the kind conflict (the naming controller reports the last name it checks)", err)
	}
	if _, err := e.dyn.Resource(webApps.GroupVersion().WithResource("webapps2")).Namespace("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("listing the refused CRD's resource: %v; want NotFound", err)
	}
}

// TestDeleteCRD deletes a CRD whose objects include one held by a
// finalizer: kube-apiserver's finalizer sequence, then the kind is gone.
func TestDeleteCRD(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	free, held := webApp("free", map[string]any{"image": "nginx"}), webApp("held", map[string]any{"image": "nginx"})
	held.SetFinalizers([]string{"example.com/hold"})
	for _, o := range []client.Object{free, held} {
		if err := e.cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	crd := &CRD{}
	crd.Name = "webapps.apps.example.com"
	if err := e.cl.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := e.cl.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	term := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating)
	if term == nil || term.Reason != "InstanceDeletionInProgress" || !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		t.Fatalf("CRD being deleted: %+v; want the cleanup finalizer and Terminating InstanceDeletionInProgress", crd.Status.Conditions)
	}
	if err := e.cl.Create(ctx, webApp("late", map[string]any{"image": "nginx"})); !apierrors.IsForbidden(err) {
		t.Errorf("create while terminating: %v; want Forbidden", err)
	}
	list, err := e.dyn.Resource(webApps).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "held" {
		t.Fatalf("objects while terminating: %v, %v; want the held one alone", list, err)
	}
	if err := e.cl.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if err := e.cl.Get(ctx, client.ObjectKeyFromObject(crd), crd); !apierrors.IsNotFound(err) {
		t.Errorf("CRD after its last object went: %v; want NotFound", err)
	}
	if _, err := e.dyn.Resource(webApps).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("listing after the CRD is gone: %v; want NotFound", err)
	}
	// And it can be installed again.
	if err := e.s.InstallPaths(ctx, "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateCRD adds a version and tightens the schema: both apply at once;
// storedVersions keeps the old storage version.
func TestUpdateCRD(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := e.cl.Create(ctx, webApp("three", map[string]any{"image": "nginx", "size": int64(3)})); err != nil {
		t.Fatal(err)
	}
	crd := &CRD{}
	if err := e.cl.Get(ctx, client.ObjectKey{Name: "webapps.apps.example.com"}, crd); err != nil {
		t.Fatal(err)
	}
	v2 := *crd.Spec.Versions[0].DeepCopy()
	v2.Name = "v2"
	v2.Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Maximum: ptr(2.0), Default: &apiextensionsv1.JSON{Raw: []byte("1")}}
	crd.Spec.Versions[0].Storage = false
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	if err := e.cl.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(crd.Status.StoredVersions, []string{"v1", "v2"}) || crd.Generation != 2 {
		t.Errorf("after the update: storedVersions %v, generation %d; want [v1 v2] and 2", crd.Status.StoredVersions, crd.Generation)
	}
	v2res := webApps.GroupVersion().WithResource("webapps")
	v2res.Version = "v2"
	// Ratcheting: the object stays valid for an unrelated change in v2.
	if _, err := e.dyn.Resource(v2res).Namespace("default").Patch(ctx, "three", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("unrelated change of an object the new schema refuses: %v; want ratcheting to allow it", err)
	}
	obj := webApp("four", map[string]any{"image": "nginx", "size": int64(3)})
	obj.SetAPIVersion("apps.example.com/v2")
	if _, err := e.dyn.Resource(v2res).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "less than or equal to 2") {
		t.Errorf("a new object over v2's maximum: %v", err)
	}
}

func TestLoad(t *testing.T) {
	ms, err := Load("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.String())
	}
	want := []string{
		"caches.apps.example.com (testdata/crds/caches.yaml, document 1)",
		"databases.apps.example.com (testdata/crds/databases.yaml, document 1)",
		"gateways.apps.example.com (testdata/crds/gateways.yaml, document 1)",
		"queues.apps.example.com (testdata/crds/queues.yaml, document 1)",
		"webapps.apps.example.com (testdata/crds/webapps.yaml, document 1)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifests mismatch (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ path, want string }{
		{"testdata/bad/broken.yaml", "crd: testdata/bad/broken.yaml, document 3: "},
		{"testdata/bad/v1beta1.yml", "crd: testdata/bad/v1beta1.yml, document 1: a CustomResourceDefinition of apiextensions.k8s.io/v1beta1: only apiextensions.k8s.io/v1 is served"},
		{"testdata/nothing-here", "crd: stat testdata/nothing-here: no such file or directory"},
	} {
		if _, err := Load(tt.path); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Load(%s) = %v; want an error starting %q", tt.path, err, tt.want)
		}
	}
}

func TestInstallError(t *testing.T) {
	e := newEnv(t)
	ms, err := Load("testdata/crds/webapps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ms[0].CRD.Spec.Scope = "Everywhere"
	err = e.s.InstallManifests(t.Context(), ms...)
	want := `crd: install webapps.apps.example.com (testdata/crds/webapps.yaml, document 1): CustomResourceDefinition.apiextensions.k8s.io "webapps.apps.example.com" is invalid: spec.scope: Unsupported value: "Everywhere": supported values: "Cluster", "Namespaced"`
	if err == nil || err.Error() != want {
		t.Errorf("InstallManifests = %v\nwant %s", err, want)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Errorf("the error %T does not wrap the API's", err)
	}
	if err := e.s.Install(t.Context(), nil); err == nil {
		t.Error("installing a nil CRD succeeded")
	}
}

func TestServeTwice(t *testing.T) {
	e := newEnv(t)
	if _, err := Serve(e.c); err == nil {
		t.Error("serving CRDs twice on one cluster succeeded")
	}
}

// TestInstallTime measures the installation of a directory of 5 CRDs with
// schemas and validation rules (the issue asks for under 100 ms); it
// reports the time and asserts nothing about it.
func TestInstallTime(t *testing.T) {
	const runs = 5
	var wall, cpu time.Duration
	for range runs {
		e := newEnv(t)
		start, startCPU := time.Now(), cpuTime()
		if err := e.s.InstallPaths(context.Background(), "testdata/crds"); err != nil {
			t.Fatal(err)
		}
		wall, cpu = wall+time.Since(start), cpu+cpuTime()-startCPU
	}
	t.Logf("installing 5 CRDs from a directory: %v wall, %v CPU (the process's, GC included) on average over %d runs", wall/runs, cpu/runs, runs)
}

func BenchmarkInstallPaths(b *testing.B) {
	for b.Loop() {
		c := memcluster.New(memcluster.Config{Seed: 1})
		s, err := Serve(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.InstallPaths(context.Background(), "testdata/crds"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTypeConverter checks the kind's type information for server-side
// apply: built from the CRD's OpenAPI schema, it types a custom resource
// (list-map keys included) and refuses a field of the wrong type.
func TestTypeConverter(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	crd := &CRD{}
	if err := e.cl.Get(t.Context(), client.ObjectKey{Name: "webapps.apps.example.com"}, crd); err != nil {
		t.Fatal(err)
	}
	k, err := customKind(crd)
	if err != nil {
		t.Fatal(err)
	}
	obj := webApp("web", map[string]any{"image": "nginx", "size": int64(2), "env": []any{map[string]any{"name": "A", "value": "1"}}})
	tv, err := k.TypeConverter.ObjectToTyped(obj)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	fs, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.String(); !strings.Contains(got, `.spec.env[name="A"].value`) {
		t.Errorf("field set %s; want env keyed by name", got)
	}
	bad := webApp("web", map[string]any{"image": "nginx", "size": "two"})
	if _, err := k.TypeConverter.ObjectToTyped(bad); err == nil {
		t.Error("ObjectToTyped accepted a string size")
	}
}
