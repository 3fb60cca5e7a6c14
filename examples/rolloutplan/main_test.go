package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunWeb(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "out.svg")
	var out strings.Builder
	err := run([]string{"-f", "testdata/web.yaml", "-from-image", "nginx:1.26", "-ready-after", "10s", "-seed", "1", "-svg", svg}, &out)
	if err != nil {
		t.Fatalf("run error: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"deployment web: 10 replicas, RollingUpdate maxSurge=25% maxUnavailable=25%, image nginx:1.27, from image nginx:1.26\n",
		"rs1 = web-",
		// The first steps: new at 3, old 10→8, then new 3→5 (13 = 10 + 3).
		"Scaled up replica set web-",
		" from 0 to 3\n",
		" from 10 to 8\n",
		" from 3 to 5\n",
		"complete after ",
		"invariants: 0 violations\n",
		"chart written to " + svg,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("run output lacks %q; got:\n%s", want, got)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.HasPrefix(s, "<svg ") || !strings.HasSuffix(s, "</svg>\n") || strings.Count(s, "<polyline") != 5 {
		t.Errorf("svg is not a 5-line chart:\n%s", s)
	}
}

func TestRunDeterministicAndDefaults(t *testing.T) {
	var a, b strings.Builder
	args := []string{"-f", "testdata/web.yaml", "-ready-jitter", "5s", "-fail", "20%", "-horizon", "20m", "-seed", "4"}
	if err := run(args, &a); err != nil {
		t.Fatal(err)
	}
	if err := run(args, &b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.String(), b.String()); diff != "" {
		t.Errorf("same seed, different output (-first +second):\n%s", diff)
	}
	if !strings.Contains(a.String(), "from a restart (kubectl rollout restart)") {
		t.Errorf("default start is not a restart:\n%s", a.String())
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file flag", nil, "-f is required"},
		{"missing file", []string{"-f", "testdata/nope.yaml"}, "no such file"},
		{"not a deployment", []string{"-f", "testdata/not-deployment.yaml"}, `kind is "Service", want Deployment`},
		{"bad yaml", []string{"-f", "testdata/bad-yaml.yaml"}, "yaml: line 5: unexpected indentation"},
		{"no template", []string{"-f", "testdata/no-template.yaml"}, "spec.template.spec.containers is required"},
		{"bad maxSurge", []string{"-f", "testdata/bad-surge.yaml"}, "spec.strategy.rollingUpdate: "},
		{"unknown field", []string{"-f", "testdata/unknown-field.json"}, `unknown field "selectr"`},
		{"bad fraction", []string{"-f", "testdata/web.yaml", "-fail", "150%"}, "outside 0–100%"},
		{"bad what-if", []string{"-f", "testdata/web.yaml", "-scale", "20"}, "want value@duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(tt.args, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) error = %v; want it to contain %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestYAMLToJSON(t *testing.T) {
	src := `
# comment
a: 1
b: "two # not a comment"
c:
- x: 1
  y: [p, 'q', 3]
- plain
d: |
  line1
  line2
e: {}
f: true
g: 25%
`
	got, err := yamlToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":1,"b":"two # not a comment","c":[{"x":1,"y":["p","q",3]},"plain"],"d":"line1\nline2\n","e":{},"f":true,"g":"25%"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("yamlToJSON mismatch (-want +got):\n%s", diff)
	}
}
