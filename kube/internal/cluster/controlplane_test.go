package cluster

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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

func TestSamples(t *testing.T) {
	in := `# HELP x_total A counter.
# TYPE x_total counter
x_total{verb="create",resource="pods"} 3
x_total{verb="update",resource="deployments/status",x="a\"b,c"} 1.5e+01 1700000000
x_total 7
# TYPE x_total_other counter
x_total_other{verb="get"} 9
`
	got, err := Samples(strings.NewReader(in), "x_total")
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{map[string]string{"verb": "create", "resource": "pods"}, 3},
		{map[string]string{"verb": "update", "resource": "deployments/status", "x": `a"b,c`}, 15}, {nil, 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Samples mismatch (-want +got):\n%s", diff)
	}
}

func TestReadProc(t *testing.T) {
	p, err := ReadProc(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if p.RSS <= 0 || p.PeakRSS < p.RSS || p.CPU < 0 {
		t.Errorf("ReadProc(self) = %+v", p)
	}
	if err := ResetPeakRSS(os.Getpid()); err != nil {
		t.Logf("ResetPeakRSS: %v", err)
	}
}
