package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/internal/golden"
	"github.com/ctrlkit/ctrlkit/internal/starve"
	"github.com/google/go-cmp/cmp"
)

// summaryOf extracts the numbers of the summary: peak replicas and its limit,
// minimum available and its limit.
func summaryOf(t *testing.T, out string) (peak, peakLimit, minAvail, minLimit int) {
	t.Helper()
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("bad number %q in output:\n%s", s, out)
		}
		return n
	}
	p := regexp.MustCompile(`peak replicas +(\d+) \(limit (\d+)\+(\d+)\)`).FindStringSubmatch(out)
	m := regexp.MustCompile(`min available +(\d+) \(limit (\d+)-(\d+)\)`).FindStringSubmatch(out)
	if p == nil || m == nil {
		t.Fatalf("no summary in output:\n%s", out)
	}
	return atoi(p[1]), atoi(p[2]) + atoi(p[3]), atoi(m[1]), atoi(m[2]) - atoi(m[3])
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantResult string
		wantErr    error
	}{
		{name: "default", wantResult: "rolled out nginx:1.28"},
		{name: "recreate", args: []string{"--strategy", "Recreate"}, wantResult: "rolled out nginx:1.28"},
		{name: "no surge", args: []string{"--replicas", "7", "--max-surge", "0", "--max-unavailable", "3"}, wantResult: "rolled out nginx:1.28"},
		{name: "surge only", args: []string{"--max-surge", "100%", "--max-unavailable", "0"}, wantResult: "rolled out nginx:1.28"},
		{name: "api errors", args: []string{"--fail", "api=0.2", "--seed", "3"}, wantResult: "rolled out nginx:1.28"},
		{
			name:       "bad image",
			args:       []string{"--fail", "bad-image=1", "--progress-deadline", "1m"},
			wantResult: `FAILED: deployment "web" exceeded its progress deadline`,
			wantErr:    errRolloutFailed,
		},
		{
			name:       "crash loop",
			args:       []string{"--fail", "crash-loop=0.5", "--progress-deadline", "90s", "--seed", "2"},
			wantResult: `FAILED: deployment "web" exceeded its progress deadline`,
			wantErr:    errRolloutFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(tt.args, &out)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("run(%q) = %v; want %v\n%s", tt.args, err, tt.wantErr, out.String())
			}
			if !strings.Contains(out.String(), "result         "+tt.wantResult) {
				t.Errorf("run(%q) printed no result %q:\n%s", tt.args, tt.wantResult, out.String())
			}
			peak, peakLimit, minAvail, minLimit := summaryOf(t, out.String())
			if peak > peakLimit {
				t.Errorf("run(%q): peak replicas %d; want at most %d", tt.args, peak, peakLimit)
			}
			if minAvail < minLimit {
				t.Errorf("run(%q): min available %d; want at least %d", tt.args, minAvail, minLimit)
			}
		})
	}
}

// The timeline shows the events and the states of the rollout.
func TestRunTimeline(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--replicas", "4", "--max-surge", "1", "--max-unavailable", "0"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"deployment default/web: 4 replicas, RollingUpdate maxSurge=1 (1) maxUnavailable=0 (0)",
		"── update: nginx:1.28",
		"event: ScalingReplicaSet: Scaled up replica set web-",
		"Progressing=True(NewReplicaSetAvailable)",
		"peak replicas  5 (limit 4+1)",
		"min available  4 (limit 4-0)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// In real-time mode the same program runs on the wall clock.
func TestRunRealtime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds of wall-clock time")
	}
	var out bytes.Buffer
	if err := run([]string{"--realtime", "--replicas", "2", "--ready-after", "0s"}, &out); err != nil {
		t.Fatalf("run = %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "real time") || !strings.Contains(out.String(), "rolled out nginx:1.28") {
		t.Errorf("unexpected output:\n%s", out.String())
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--replicas", "-1"},
		{"--strategy", "BlueGreen"},
		{"--fail", "bad-image=2"},
		{"--fail", "meteor=0.1"},
		{"--fail", "bad-image=0.7,crash-loop=0.7"},
		{"--from", "x", "--to", "x"},
		{"--progress-deadline", "0s"},
		{"extra"},
	} {
		var out bytes.Buffer
		if err := run(args, &out); err == nil {
			t.Errorf("run(%q) = nil; want an error", args)
		}
	}
}

func TestFailuresFlag(t *testing.T) {
	var f failures
	if err := f.Set("bad-image=0.25, api=0.05"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.String(), "bad-image=0.25,api=0.05"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The default run prints exactly the timeline in testdata/default.txt.
// Review a change of it (go test -update) like a change of code.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/default.txt", out.String(), *update)
}

// The same flags give the same output, byte for byte, run after run and
// however starved of CPU the program is: virtual time moves only when no
// work is left at the current instant, and the deterministic clock runs
// the work in a fixed order.
func TestRunIsReproducible(t *testing.T) {
	scenarios := [][]string{
		nil,
		{"--strategy", "Recreate"},
		{"--fail", "crash-loop=0.5", "--progress-deadline", "90s", "--seed", "2"},
		{"--fail", "api=0.2,bad-image=0.1", "--seed", "3"},
	}
	runs := func() []string {
		var outs []string
		for _, args := range scenarios {
			var out bytes.Buffer
			err := run(args, &out)
			outs = append(outs, fmt.Sprintf("%s\nerr=%v", out.String(), err))
		}
		return outs
	}
	first := runs()
	for i := range 3 {
		if diff := cmp.Diff(first, runs()); diff != "" {
			t.Fatalf("run %d differs from the first (-first +again):\n%s", i+2, diff)
		}
	}
	t.Run("starved", func(t *testing.T) {
		starve.CPU(t, 4)
		if diff := cmp.Diff(first, runs()); diff != "" {
			t.Fatalf("a run starved of CPU differs (-idle +starved):\n%s", diff)
		}
	})
}
