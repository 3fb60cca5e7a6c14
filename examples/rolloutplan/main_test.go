package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/starve"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// runCmd runs the command and returns its exit status, stdout and stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunWeb(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "out.svg")
	code, got, errOut := runCmd("-f", "testdata/web.yaml", "-from-image", "nginx:1.26", "-ready-after", "10s", "-seed", "1", "-svg", svg)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"deployment web: 10 replicas, RollingUpdate maxSurge=25% maxUnavailable=25%, image nginx:1.27, from image nginx:1.26\n",
		"rs1 = web-",
		// The first steps: new at 3, old 10→8, then new 3→5 (13 = 10 + 3).
		"Scaled up replica set web-",
		" from 0 to 3\n",
		" from 10 to 8\n",
		" from 3 to 5\n",
		"complete after 30s",
		"invariants: 0 violations\n",
		"chart written to " + svg,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("run output lacks %q; got:\n%s", want, got)
		}
	}
	if _, err := os.Stat(svg); err != nil {
		t.Error(err)
	}
}

// TestRunDeterministic: the same seed gives byte-identical text, JSON and
// SVG.
// The same seed gives the same output and chart, run after run, also
// starved of CPU: the planner's time is virtual.
func TestRunDeterministic(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"text", "json"} {
		runOnce := func(name string) (out, chart string) {
			svg := filepath.Join(dir, format+name+".svg")
			_, out, _ = runCmd("-f", "testdata/web.yaml", "-ready-jitter", "5s", "-fail", "20%", "-horizon", "20m", "-seed", "4", "-o", format, "-svg", svg)
			b, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			return strings.ReplaceAll(out, svg, "CHART"), string(b)
		}
		check := func(t *testing.T, what, out0, chart0, out, chart string) {
			t.Helper()
			if diff := cmp.Diff(out0, out); diff != "" {
				t.Errorf("-o %s, %s: same seed, different output (-first +this):\n%s", format, what, diff)
			}
			if diff := cmp.Diff(chart0, chart); diff != "" {
				t.Errorf("-o %s, %s: same seed, different chart (-first +this):\n%s", format, what, diff)
			}
		}
		out0, chart0 := runOnce("a")
		out1, chart1 := runOnce("b")
		check(t, "second run", out0, chart0, out1, chart1)
		t.Run(format+" starved", func(t *testing.T) {
			starve.CPU(t, 3)
			out2, chart2 := runOnce("c")
			check(t, "run starved of CPU", out0, chart0, out2, chart2)
		})
	}
}

func TestRunMultiDocument(t *testing.T) {
	code, out, errOut := runCmd("-f", "testdata/multi.yaml", "-o", "json")
	var got []jsonResult
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v; stderr %q", code, err, errOut)
	}
	if len(got) != 2 || got[0].Deployment != "web" || got[1].Deployment != "api" || !got[0].Complete || !got[1].Complete {
		t.Errorf("planned %+v; want web and api, both complete", got)
	}
	if got[1].MaxSpec != 2 || got[1].MinBound != 0 || got[0].MaxSpec != 5 || got[0].MinBound != 3 {
		t.Errorf("bounds: web %d/%d, api (Recreate) %d/%d; want 5/3 and 2/0", got[0].MaxSpec, got[0].MinBound, got[1].MaxSpec, got[1].MinBound)
	}
}

func TestRunGate(t *testing.T) {
	stall := []string{"-f", "testdata/web.yaml", "-crashloop", "40%", "-horizon", "15m"}
	code, out, _ := runCmd(stall...)
	if code != exitFail || !strings.Contains(out, "stalled: no progress after step") {
		t.Errorf("stalled plan: exit %d; want 1 and the stall:\n%s", code, out)
	}
	if code, _, _ := runCmd(append(stall, "-fail-on", "none")...); code != exitOK {
		t.Errorf("-fail-on none: exit %d; want 0", code)
	}
	if code, _, _ := runCmd(append(stall, "-fail-on", "violation")...); code != exitOK {
		t.Errorf("-fail-on violation with no violation: exit %d; want 0", code)
	}
	code, out, _ = runCmd(append(stall, "-o", "json")...)
	var got []jsonResult
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitFail {
		t.Fatalf("-o json: exit %d, %v", code, err)
	}
	if got[0].Complete || len(got[0].Stall) == 0 || got[0].Faults.CrashLoop == 0 {
		t.Errorf("-o json of a stall: %+v", got[0])
	}
}

// TestRunFaultReport: a fraction is drawn per pod; when it hits no pod
// the report says so instead of showing a healthy rollout silently.
func TestRunFaultReport(t *testing.T) {
	_, out, _ := runCmd("-f", "testdata/web.yaml", "-crashloop", "5%")
	want := "fault model: crash-looping 5% per new pod (seed 1): 0 of 10 new pods drawn crash-looping (expected 0.5); none was hit"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	_, out, _ = runCmd("-f", "testdata/web.yaml", "-crashloop", "40%", "-horizon", "15m")
	if want := "fault model: crash-looping 40% per new pod (seed 1): 3 of 10 new pods drawn crash-looping (expected 4.0)\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
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
		{"not a deployment", []string{"-f", "testdata/not-deployment.yaml"}, `no Deployment in the manifest (found kind "Service")`},
		{"bad yaml", []string{"-f", "testdata/bad-yaml.yaml"}, "document 1: error converting YAML to JSON: yaml: line 5:"},
		{"no template", []string{"-f", "testdata/no-template.yaml"}, "spec.template.spec.containers is required"},
		{"bad maxSurge", []string{"-f", "testdata/bad-surge.yaml"}, "spec.strategy.rollingUpdate: "},
		{"unknown field", []string{"-f", "testdata/unknown-field.json"}, `unknown field "selectr"`},
		{"int32 overflow", []string{"-f", "testdata/replicas-maxint32.yaml"},
			"spec.replicas 2147483647 + maxSurge 536870912 = 2684354559 overflows int32: the Deployment controller (upstream's, and ctrlkit's, which matches it) computes a negative maximum"},
		{"too big", []string{"-f", "testdata/replicas-100000.yaml"}, "100000 replicas is above the limit of 5000"},
		{"bad fraction", []string{"-f", "testdata/web.yaml", "-fail", "150%"}, "outside 0–100%"},
		{"bad what-if", []string{"-f", "testdata/web.yaml", "-scale", "20"}, "want value@duration"},
		{"bad fail-on", []string{"-f", "testdata/web.yaml", "-fail-on", "stalls"}, `-fail-on "stalls"`},
		{"bad output", []string{"-f", "testdata/web.yaml", "-o", "yaml"}, `-o "yaml": want text or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(tt.args...)
			if code != exitError || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "memcluster") {
				t.Errorf("run(%q) = exit %d, stderr %q (stdout %q); want exit 2 and %q", tt.args, code, errOut, out, tt.want)
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	code, out, _ := runCmd("-h")
	if code != exitOK || !strings.Contains(out, "-fail-on") {
		t.Errorf("-h: exit %d, output %q; want 0 and the flags", code, out)
	}
}
