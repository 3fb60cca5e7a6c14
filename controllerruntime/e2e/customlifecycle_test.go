//go:build e2e

package e2e

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// colorsCRD has selectable fields: a string, an integer and a boolean.
const colorsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: colors.sbs.ctrlkit.dev
spec:
  group: sbs.ctrlkit.dev
  names: {kind: Color, listKind: ColorList, plural: colors, singular: color}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    - jsonPath: .spec.count
    - jsonPath: .spec.enabled
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              count: {type: integer}
              enabled: {type: boolean}
`

// TestCustomLifecycleSideBySide compares, on kube-apiserver and on
// memcluster with the bench's CRD support, what main's lifecycle work
// does for custom resources: pagination with limit and continue, field
// selectors (metadata's only, unless the CRD has selectableFields), a
// custom resource created in a missing or a terminating namespace, and
// the start of a foreground deletion of an owner whose dependent is held
// by a finalizer. The answers are compared as TestSideBySideCustomResources
// compares them; of a list, the names of the items, whether a continue
// token came back and the remaining item count (tokens differ).
//
// The suite's kube-apiserver runs without kube-controller-manager
// (envtest), so what its garbage collector and namespace controller do
// next is not compared here; kube/e2e compares those end states for the
// built-in kinds with kube-controller-manager running.
func TestCustomLifecycleSideBySide(t *testing.T) {
	crds := []*apiextensionsv1.CustomResourceDefinition{parseCRD(t, webAppsCRD), parseCRD(t, colorsCRD)}
	ns := sideNamespace(t)
	webapps := schema.GroupVersionResource{Group: sbsGroup, Version: "v1", Resource: "webapps"}
	colors := schema.GroupVersionResource{Group: sbsGroup, Version: "v1", Resource: "colors"}
	var log stepLog
	for _, s := range crdSides(t, crds...) {
		ctx := t.Context()
		cs, dc := sideClients(t, s, ns, ns+"-t")
		record := log.side(s.name)
		web := dc.Resource(webapps).Namespace(ns)
		for i := 1; i <= 5; i++ {
			obj, err := waitCreate(t, s.name, web, crObject("WebApp", fmt.Sprintf("p-%d", i), map[string]any{"image": "nginx"}))
			record(fmt.Sprintf("create p-%d", i), outcomeOf(obj, err, ns))
		}
		list := func(step string, rc dynamic.ResourceInterface, opts metav1.ListOptions) string {
			l, err := rc.List(ctx, opts)
			if err != nil {
				record(step, outcomeOf(nil, err, ns))
				return ""
			}
			record(step, listOutcome(l))
			return l.GetContinue()
		}
		next := list("list limit 2", web, metav1.ListOptions{Limit: 2})
		next = list("list limit 2, continue", web, metav1.ListOptions{Limit: 2, Continue: next})
		list("list limit 2, last page", web, metav1.ListOptions{Limit: 2, Continue: next})
		next = list("list limit 3 with a field selector", web, metav1.ListOptions{Limit: 3, FieldSelector: "metadata.name!=p-2"})
		list("its continue", web, metav1.ListOptions{Limit: 3, FieldSelector: "metadata.name!=p-2", Continue: next})
		list("list a continue token of another selector", web, metav1.ListOptions{Limit: 2, Continue: "not-a-token"})
		list("field selector metadata.name", web, metav1.ListOptions{FieldSelector: "metadata.name=p-3"})
		list("field selector metadata.namespace", web, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
		list("field selector across namespaces", dc.Resource(webapps), metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns + ",metadata.name=p-1"})
		list("field selector on a field that is not selectable", web, metav1.ListOptions{FieldSelector: "spec.image=nginx"})

		col := dc.Resource(colors).Namespace(ns)
		for i, spec := range []map[string]any{
			{"color": "red", "count": int64(1), "enabled": true},
			{"color": "blue", "count": int64(2), "enabled": false},
			{"color": "red", "count": int64(2)},
			{},
		} {
			obj, err := waitCreate(t, s.name, col, crObject("Color", fmt.Sprintf("c-%d", i), spec))
			record(fmt.Sprintf("create c-%d", i), outcomeOf(obj, err, ns))
		}
		for _, sel := range []string{"spec.color=red", "spec.color!=red", "spec.count=2", "spec.enabled=true", "spec.enabled=false",
			"spec.color=red,spec.count=2", "spec.color=", "spec.size=1", "metadata.name=c-1,spec.color=blue"} {
			list("colors "+sel, col, metav1.ListOptions{FieldSelector: sel})
		}
		list("colors spec.color=red, limit 1", col, metav1.ListOptions{FieldSelector: "spec.color=red", Limit: 1})
		w, err := col.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.size=1"})
		if err == nil {
			w.Stop()
		}
		record("watch colors spec.size=1", outcomeOf(nil, err, ns))

		obj, err := dc.Resource(webapps).Namespace(ns+"-missing").Create(ctx, crObject("WebApp", "lost", map[string]any{"image": "nginx"}), metav1.CreateOptions{})
		record("create in a missing namespace", outcomeOf(obj, err, ns))

		held := crObject("WebApp", "held", map[string]any{"image": "nginx"})
		held.SetFinalizers([]string{"sbs.ctrlkit.dev/hold"})
		tns := dc.Resource(webapps).Namespace(ns + "-t")
		obj, err = tns.Create(ctx, held, metav1.CreateOptions{})
		record("create held in the namespace to delete", outcomeOf(obj, err, ns))
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns+"-t", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: deleting the namespace: %v", s.name, err)
		}
		obj, err = tns.Create(ctx, crObject("WebApp", "late", map[string]any{"image": "nginx"}), metav1.CreateOptions{})
		record("create in a terminating namespace", outcomeOf(obj, err, ns))

		owner, err := web.Create(ctx, crObject("WebApp", "owner", map[string]any{"image": "nginx"}), metav1.CreateOptions{})
		record("create the owner", outcomeOf(owner, err, ns))
		if err != nil {
			continue
		}
		dep := crObject("WebApp", "dep", map[string]any{"image": "nginx"})
		dep.SetFinalizers([]string{"sbs.ctrlkit.dev/hold"})
		dep.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: sbsGroup + "/v1", Kind: "WebApp", Name: "owner", UID: owner.GetUID(),
			BlockOwnerDeletion: new(true)}})
		obj, err = web.Create(ctx, dep, metav1.CreateOptions{})
		if err == nil {
			refs := obj.GetOwnerReferences()
			refs[0].UID = "<owner's>"
			obj.SetOwnerReferences(refs)
		}
		record("create its held dependent", outcomeOf(obj, err, ns))
		fg := metav1.DeletePropagationForeground
		err = web.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg})
		record("delete the owner in the foreground", outcomeOf(nil, err, ns))
		obj, err = web.Get(ctx, "owner", metav1.GetOptions{})
		record("the owner being deleted", outcomeOf(obj, err, ns))
		obj, err = web.Patch(ctx, "owner", types.MergePatchType, []byte(`{"metadata":{"finalizers":["sbs.ctrlkit.dev/late"]}}`), metav1.PatchOptions{})
		record("a new finalizer on the owner being deleted", outcomeOf(obj, err, ns))
	}
	log.compare(t, "custom resources' lifecycle")
}

// crObject is a custom resource of the side-by-side group's v1.
func crObject(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sbsGroup + "/v1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// listOutcome is a list's comparable answer: its kind, the names of its
// items, whether it has a continue token, and its remaining item count.
func listOutcome(l *unstructured.UnstructuredList) crOutcome {
	var items []any
	for _, it := range l.Items {
		items = append(items, it.GetNamespace()+"/"+it.GetName())
	}
	o := map[string]any{"kind": l.GetKind(), "apiVersion": l.GetAPIVersion(), "items": items, "continue": l.GetContinue() != ""}
	if n := l.GetRemainingItemCount(); n != nil {
		o["remainingItemCount"] = *n
	}
	return crOutcome{Object: o}
}
