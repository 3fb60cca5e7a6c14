package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLabels(t *testing.T) {
	got := parseLabels(`code="201",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="status",verb="PUT",version="v1",x="a\"b,c"`)
	want := map[string]string{"code": "201", "component": "apiserver", "dry_run": "", "group": "apps", "resource": "replicasets",
		"scope": "resource", "subresource": "status", "verb": "PUT", "version": "v1", "x": `a"b,c`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseLabels mismatch (-want +got):\n%s", diff)
	}
}

func TestApiserverVerb(t *testing.T) {
	for in, want := range map[string]string{"POST": "create", "PUT": "update", "PATCH": "patch", "APPLY": "patch", "DELETE": "delete", "LIST": "list", "WATCH": "watch"} {
		if got := apiserverVerb(in); got != want {
			t.Errorf("apiserverVerb(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestSpecSequences(t *testing.T) {
	es := []Entry{{Kind: "rs", Name: "a", Spec: 0}, {Kind: "rs", Name: "a", Spec: 3}, {Kind: "rs", Name: "a", Spec: 3},
		{Kind: "deploy", Name: "web"}, {Kind: "rs", Name: "b", Spec: 10}, {Kind: "rs", Name: "a", Spec: 5}}
	want := map[string][]int32{"a": {0, 3, 5}, "b": {10}}
	if diff := cmp.Diff(want, SpecSequences(es)); diff != "" {
		t.Errorf("SpecSequences mismatch (-want +got):\n%s", diff)
	}
}
