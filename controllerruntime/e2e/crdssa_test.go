//go:build e2e

package e2e

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Server-side apply to custom resources, side by side: the same apply
// sequences (ssaStep, run by TestSSASideBySide's sideClient) to the
// custom resources of webAppsCRD, gadgetsCRD and blobsCRD on
// kube-apiserver and on memcluster with the bench's CRD support. The
// answers are compared as TestSSASideBySide compares them: code, reason,
// message and causes of an error, the object with its managedFields (but
// times) and whether a new version was written. The CRD's structural
// schema types the objects for the field managers on both sides: env is
// a list of type map keyed by name, tags a set, conditions a map keyed by
// type.

// crResource is the resource path of a custom resource of the
// side-by-side CRDs, for ssaStep.resource.
func crResource(version, plural string) string { return sbsGroup + "/" + version + "/" + plural }

func crdSSASequences() []ssaSequence {
	webapps := crResource("v1", "webapps")
	head := "apiVersion: " + sbsGroup + "/v1\nkind: WebApp\nmetadata:\n  name: NAME\n"
	web := func(spec string) string { return head + "spec:\n" + indent(spec, "  ") }
	webStatus := func(status string) string { return head + "status:\n" + indent(status, "  ") }
	apply := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", resource: webapps, manager: manager, body: body}
	}
	force := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", resource: webapps, manager: manager, body: body, force: true}
	}
	status := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", resource: webapps, sub: "status", manager: manager, body: body}
	}
	get := ssaStep{do: "get", resource: webapps}
	base := web("image: nginx\nsize: 2\n")
	gadget := func(version, spec string) ssaStep {
		return ssaStep{do: "apply", resource: crResource(version, "gadgets"), manager: "a",
			body: "apiVersion: " + sbsGroup + "/" + version + "\nkind: Gadget\nmetadata:\n  name: NAME\nspec:\n" + indent(spec, "  ")}
	}
	gadgetBy := func(manager, version, spec string, force bool) ssaStep {
		st := gadget(version, spec)
		st.manager, st.force = manager, force
		return st
	}
	blob := func(manager, body string) ssaStep {
		return ssaStep{do: "apply", resource: "cluster:" + crResource("v1", "blobs"), manager: manager,
			body: "apiVersion: " + sbsGroup + "/v1\nkind: Blob\nmetadata:\n  name: NAME\n" + body}
	}
	return []ssaSequence{
		{"CR: apply creates, defaults are nobody's", []ssaStep{apply("a", base), get}},
		{"CR: apply twice changes nothing", []ssaStep{apply("a", base), apply("a", base)}},
		{"CR: list-map env merges by name", []ssaStep{
			apply("a", web("image: nginx\nenv:\n- {name: A, value: '1'}\n")),
			apply("b", web("image: nginx\nenv:\n- {name: B, value: '2'}\n")), get}},
		{"CR: list-map entry shared, then dropped by one", []ssaStep{
			apply("a", web("image: nginx\nenv:\n- {name: A, value: '1'}\n- {name: C, value: '3'}\n")),
			apply("b", web("image: nginx\nenv:\n- {name: C, value: '3'}\n")),
			apply("a", web("image: nginx\nenv:\n- {name: A, value: '1'}\n")), get}},
		{"CR: conflict on a list-map entry's value", []ssaStep{
			apply("a", web("image: nginx\nenv:\n- {name: A, value: '1'}\n")),
			apply("b", web("image: nginx\nenv:\n- {name: A, value: '9'}\n")),
			force("b", web("image: nginx\nenv:\n- {name: A, value: '9'}\n")), get}},
		{"CR: conflict on size", []ssaStep{apply("a", base), apply("b", web("image: nginx\nsize: 3\n"))}},
		{"CR: force takes over", []ssaStep{apply("a", base), force("b", web("image: nginx\nsize: 3\n")), apply("a", base), get}},
		{"CR: a manager removes its field (the default comes back)", []ssaStep{
			apply("a", web("image: nginx\nsize: 2\ntier: backend\n")), apply("a", web("image: nginx\nsize: 2\n")), get}},
		{"CR: set tags union", []ssaStep{
			apply("a", web("image: nginx\ntags: [p, q]\n")), apply("b", web("image: nginx\ntags: [q, r]\n")), get}},
		{"CR: atomic-free map of labels", []ssaStep{
			apply("a", web("image: nginx\nlabels: {x: '1'}\n")), apply("b", web("image: nginx\nlabels: {w: '2'}\n")), get}},
		{"CR: preserved unknown fields in config", []ssaStep{
			apply("a", web("image: nginx\nconfig: {k: {deep: 1}}\n")), apply("b", web("image: nginx\nconfig: {k: {other: 2}}\n")), get}},
		{"CR: unknown field is pruned", []ssaStep{apply("a", web("image: nginx\nbogus: 1\n")), get}},
		{"CR: schema violation", []ssaStep{apply("a", web("image: nginx\nsize: 7\n"))}},
		{"CR: CEL rule violation", []ssaStep{apply("a", web("image: nginx\nsize: 1\nminReady: 2\n"))}},
		{"CR: wrong type for the schema", []ssaStep{apply("a", web("image: nginx\nsize: two\n"))}},
		{"CR: missing required field", []ssaStep{apply("a", web("size: 1\n"))}},
		{"CR: kind of another resource", []ssaStep{apply("a", "apiVersion: "+sbsGroup+"/v1\nkind: Gadget\nmetadata:\n  name: NAME\nspec: {}\n")}},
		{"CR: status apply", []ssaStep{apply("a", base),
			status("ctrl", webStatus("readyReplicas: 1\nconditions:\n- {type: Ready, status: 'True'}\n")), get}},
		{"CR: status conditions merge by type", []ssaStep{apply("a", base),
			status("ctrl", webStatus("conditions:\n- {type: Ready, status: 'True'}\n")),
			status("other", webStatus("conditions:\n- {type: Synced, status: 'False'}\n")),
			status("other", webStatus("conditions:\n- {type: Ready, status: 'False'}\n")), get}},
		{"CR: status apply ignores spec, spec apply ignores status", []ssaStep{apply("a", base),
			status("ctrl", head+"spec: {image: other, size: 3}\nstatus: {phase: Running}\n"),
			apply("a", head+"spec: {image: nginx, size: 2}\nstatus: {phase: Failed}\n"), get}},
		{"CR: status apply to a missing object", []ssaStep{status("ctrl", webStatus("phase: Running\n"))}},
		{"CR: update then apply conflicts with the updater", []ssaStep{
			{do: "create", resource: webapps, manager: "creator", body: base},
			apply("a", web("image: nginx\nsize: 3\n")), force("a", web("image: nginx\nsize: 3\n")), get}},
		{"CR: merge patch after apply takes the field", []ssaStep{apply("a", base),
			{do: "merge", resource: webapps, manager: "patcher", body: `{"spec":{"size":1}}`}, apply("a", base), get}},
		{"CR: update without a manager is the user agent's", []ssaStep{apply("a", base),
			{do: "update", resource: webapps, edit: func(obj map[string]any) { setPath(obj, "backend", "spec", "tier") }}, get}},
		{"CR: apply in the storage version of a two-version CRD", []ssaStep{gadget("v2", "size: 5\n"), gadget("v2", "size: 6\n")}},
		{"CR: apply in a version other than the storage one", []ssaStep{gadget("v1", "size: 2\n"), gadget("v1", "size: 3\n"),
			{do: "get", resource: crResource("v1", "gadgets")}, {do: "get", resource: crResource("v2", "gadgets")}}},
		{"CR: apply in v1 with a field v2 lacks", []ssaStep{gadget("v1", "size: 2\ncolor: red\n"),
			{do: "get", resource: crResource("v1", "gadgets")}, {do: "get", resource: crResource("v2", "gadgets")}}},
		{"CR: managers of two versions conflict and force", []ssaStep{gadget("v1", "size: 2\n"),
			gadgetBy("b", "v2", "size: 4\n", false), gadgetBy("b", "v2", "size: 4\n", true),
			gadget("v1", "size: 3\n"), {do: "get", resource: crResource("v1", "gadgets")}}},
		{"CR: update in v1, then apply in v2", []ssaStep{
			{do: "create", resource: crResource("v1", "gadgets"), manager: "creator", body: "apiVersion: " + sbsGroup + "/v1\nkind: Gadget\nmetadata:\n  name: NAME\nspec:\n  size: 1\n"},
			{do: "merge", resource: crResource("v1", "gadgets"), manager: "patcher", body: `{"spec":{"size":2}}`},
			gadgetBy("b", "v2", "size: 5\n", false), gadgetBy("b", "v2", "size: 5\n", true),
			{do: "get", resource: crResource("v2", "gadgets")}}},
		{"CR: cluster-scoped, unknown fields kept", []ssaStep{blob("a", "data: {x: 1}\n"), blob("b", "data: {w: 2}\n"), blob("b", "data: {x: 3}\n")}},
	}
}

// TestCRDSSASideBySide runs crdSSASequences on both sides.
func TestCRDSSASideBySide(t *testing.T) {
	crds := []*apiextensionsv1.CustomResourceDefinition{parseCRD(t, webAppsCRD), parseCRD(t, gadgetsCRD), parseCRD(t, blobsCRD)}
	ns := sideNamespace(t)
	seqs := crdSSASequences()
	matched := runSSASequences(t, newSideClients(t, crdSides(t, crds...), ns), ns, "crssa", seqs)
	t.Logf("%d of %d apply sequences to custom resources give the same answers and objects (managedFields included) on kube-apiserver and memcluster", matched, len(seqs))
}
