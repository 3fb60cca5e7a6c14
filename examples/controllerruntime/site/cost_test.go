//go:build unix

package site

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// BenchmarkExplore measures what a seed of this example's exploration
// costs: b.N seeds of the fixed operator (every property holds, so every
// seed runs to its end), one bench at a time, reported as seeds per
// CPU-second (user and system time of the exploration alone): in the
// canonical order, with every perturbation, and with every perturbation
// and Options.UntrackedBuiltinWrites. Explore needs
// a *testing.T (each bench is a testing/synctest bubble), so the seeds run
// in a child process of the test binary, in TestExploreCost. Use a fixed
// count of seeds, so that two runs explore the same ones:
//
//	go test -run '^$' -bench BenchmarkExplore -benchtime 200x -count 6 ./site/
func BenchmarkExplore(b *testing.B) {
	for _, bc := range []struct {
		name    string
		perturb string
	}{{"canonical", "none"}, {"perturbed", "all"}, {"perturbed-untracked", "all-untracked"}} {
		b.Run(bc.name, func(b *testing.B) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestExploreCost$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "SITE_EXPLORE_COST_SEEDS="+strconv.Itoa(b.N), "SITE_EXPLORE_COST_PERTURB="+bc.perturb)
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%v:\n%s", err, out)
			}
			var cpu float64
			for line := range strings.Lines(string(out)) {
				if _, v, ok := strings.Cut(line, "explore-cpu-seconds="); ok {
					if cpu, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
						b.Fatalf("%q: %v", line, err)
					}
				}
			}
			if cpu <= 0 {
				b.Fatalf("the child measured no CPU time:\n%s", out)
			}
			b.ReportMetric(float64(b.N)/cpu, "seeds/CPU-s")
			b.ReportMetric(cpu*1e3/float64(b.N), "CPU-ms/seed")
		})
	}
}

// TestExploreCost is BenchmarkExplore's child: it explores
// SITE_EXPLORE_COST_SEEDS seeds and prints the CPU time they took.
func TestExploreCost(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("SITE_EXPLORE_COST_SEEDS"))
	if err != nil {
		t.Skip("BenchmarkExplore runs it (SITE_EXPLORE_COST_SEEDS=<seeds>)")
	}
	opts := options(t)
	opts.Seeds, opts.Parallel = n, 1
	switch os.Getenv("SITE_EXPLORE_COST_PERTURB") {
	case "all":
		opts.Options.Perturb = clustertest.AllPerturbations
	case "all-untracked": // the built-in controllers' writes out of managedFields
		opts.Options.Perturb, opts.Options.UntrackedBuiltinWrites = clustertest.AllPerturbations, true
	}
	before := cpuSeconds(t)
	if v := clustertest.Explore(t, opts, scenario(false)); v != nil {
		t.Fatalf("the fixed operator broke %q", v.Property)
	}
	fmt.Printf("explore-cpu-seconds=%.4f\n", cpuSeconds(t)-before)
}

// cpuSeconds is the CPU time the process has used (user and system).
func cpuSeconds(t *testing.T) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
