package crd

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/testsupport"
)

// ownedBy returns the fields entry manager owns through an operation of
// op (its fieldsV1 JSON), or "".
func ownedBy(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) string {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == op && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}

// TestServerSideApply applies custom resources of a CRD with two managers
// on memcluster alone: managedFields typed by the CRD's schema (env, a
// list of type map, merges by name), a 409 naming the other manager and
// the field, force, removal of what a manager stops applying, an apply to
// the status subresource, and an update recorded beside the applies.
func TestServerSideApply(t *testing.T) {
	e := newEnv(t)
	if err := e.s.InstallPaths(t.Context(), "testdata/crds/webapps.yaml"); err != nil {
		t.Fatal(err)
	}
	rc := e.dyn.Resource(webApps).Namespace("default")
	apply := func(manager string, force bool, body string, sub ...string) (*unstructured.Unstructured, error) {
		return rc.Patch(t.Context(), "web", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force}, sub...)
	}
	head := "apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: web}\n"

	obj, err := apply("alice", false, head+"spec: {image: nginx, size: 2, env: [{name: A, value: '1'}]}")
	if err != nil {
		t.Fatalf("first apply: %v", err)
	}
	if got := testsupport.Managers(obj); !slices.Equal(got, []string{"alice/Apply"}) {
		t.Fatalf("managers after the first apply: %v", got)
	}
	if got := ownedBy(obj, "alice", metav1.ManagedFieldsOperationApply); !strings.Contains(got, `"k:{\"name\":\"A\"}"`) {
		t.Errorf("alice's fields %s; want env keyed by name", got)
	}
	if tier, _, _ := unstructured.NestedString(obj.Object, "spec", "tier"); tier != "frontend" {
		t.Errorf("spec.tier %q; want the schema's default", tier)
	}

	obj, err = apply("bob", false, head+"spec: {image: nginx, env: [{name: B, value: '2'}]}")
	if err != nil {
		t.Fatalf("bob's apply: %v", err)
	}
	env, _, _ := unstructured.NestedSlice(obj.Object, "spec", "env")
	if len(env) != 2 {
		t.Errorf("env %v; want A and B merged by name", env)
	}

	_, err = apply("bob", false, head+"spec: {image: nginx, size: 3, env: [{name: B, value: '2'}]}")
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice"`) || !strings.Contains(err.Error(), ".spec.size") {
		t.Fatalf("bob's apply of size: %v; want a 409 naming alice and .spec.size", err)
	}
	obj, err = apply("bob", true, head+"spec: {image: nginx, size: 3, env: [{name: B, value: '2'}]}")
	if err != nil {
		t.Fatalf("bob's forced apply: %v", err)
	}
	if got := ownedBy(obj, "alice", metav1.ManagedFieldsOperationApply); strings.Contains(got, `"f:size"`) {
		t.Errorf("alice still owns size after bob forced it: %s", got)
	}

	obj, err = apply("alice", false, head+"spec: {image: nginx}")
	if err != nil {
		t.Fatalf("alice's apply without env: %v", err)
	}
	env, _, _ = unstructured.NestedSlice(obj.Object, "spec", "env")
	if len(env) != 1 || env[0].(map[string]any)["name"] != "B" {
		t.Errorf("env %v; want only bob's B once alice stops applying A", env)
	}

	obj, err = apply("carol", false, head+"status: {readyReplicas: 1}", "status")
	if err != nil {
		t.Fatalf("status apply: %v", err)
	}
	if got := testsupport.Managers(obj); !slices.Contains(got, "carol/Apply/status") {
		t.Errorf("managers after the status apply: %v", got)
	}

	obj.Object["spec"].(map[string]any)["pinned"] = true
	obj, err = rc.Update(t.Context(), obj, metav1.UpdateOptions{FieldManager: "dave"})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := ownedBy(obj, "dave", metav1.ManagedFieldsOperationUpdate); got != `{"f:spec":{"f:pinned":{}}}` {
		t.Errorf("dave's update recorded %q", got)
	}

	_, err = apply("erin", false, head+"spec: {image: nginx, size: two}")
	if err == nil {
		t.Error("an apply of a string size was accepted")
	}
}
