// Command rolloutplan predicts, step by step, what a Deployment rollout
// will do, by running this module's Deployment and ReplicaSet controllers
// in virtual time (package planner), and can gate a CI job on it.
//
//	go run ./examples/rolloutplan -f deployment.yaml [flags]
//
// The manifest (YAML or JSON; every apps/v1 Deployment in it is planned,
// other kinds are skipped) describes the version being rolled out. The
// rollout starts from a complete rollout of the previous version, which
// is, by default, the same template without the
// kubectl.kubernetes.io/restartedAt annotation (the rollout `kubectl
// rollout restart` triggers); with -from-image, the same template with
// the first container's image replaced (an image update); with -initial,
// nothing (a new Deployment).
//
// It prints the timeline as a table, the invariant check, what the fault
// model drew and, if the rollout does not finish within -horizon, why it
// is stuck; -svg writes a chart; -o json writes all of it as JSON.
//
// Exit status: 0 when every rollout completes with no violated invariant;
// 1 when one stalls or violates an invariant (see -fail-on); 2 on an
// error (a bad manifest or flag).
//
// Flags:
//
//	-f file           the manifest (required)
//	-from-image img   start from the manifest with this image
//	-initial          start from nothing
//	-start-delay d    creation to running containers (default 0)
//	-ready-after d    running to Ready (default 10s)
//	-ready-jitter d   extra uniform readiness delay per pod (default 0)
//	-fail p           fraction of new pods never Ready (10% or 0.1), drawn per pod
//	-crashloop p      fraction of new pods crash-looping, drawn per pod
//	-bad-image p      fraction of new pods failing to pull their image, drawn per pod
//	-shutdown d       time a deleted pod takes to stop (default: its grace period)
//	-scale n@d        what-if: set replicas to n at time d (e.g. 20@30s)
//	-rollover img@d   what-if: push image img at time d
//	-seed n           random seed (default 1)
//	-horizon d        simulated time limit (default 1h)
//	-max-replicas n   refuse larger Deployments (default 5000; the simulation runs every pod)
//	-fail-on list     what exits 1: stall, violation, both (default) or none
//	-o format         text (default) or json
//	-svg file         write an SVG chart (several Deployments: file-NAME.svg)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/planner"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitError = 2
)

// restartedAt is the annotation value of the default "restart" rollout;
// fixed, so that output is reproducible.
const restartedAt = "2026-01-01T00:00:00Z"

const restartedAtKey = "kubectl.kubernetes.io/restartedAt"

// config is the parsed command line.
type config struct {
	file, fromImage, svg, output string
	initial                      bool
	model                        planner.PodModel
	opts                         planner.Options
	scales, rollovers            []string
	failOnStall, failOnViolation bool
}

// run is the command: it parses args, plans every Deployment of the
// manifest, writes the report to out (errors and progress to errOut) and
// returns the exit status.
func run(args []string, out, errOut io.Writer) int {
	cfg, err := parse(args, out)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(errOut, "rolloutplan:", err)
		return exitError
	}
	src, err := os.ReadFile(cfg.file)
	if err != nil {
		fmt.Fprintln(errOut, "rolloutplan:", err)
		return exitError
	}
	ds, err := planner.DecodeDeployments(src)
	if err != nil {
		fmt.Fprintf(errOut, "rolloutplan: %s: %v\n", cfg.file, err)
		return exitError
	}
	var results []result
	for _, d := range ds {
		r, err := plan(cfg, d, errOut)
		if err != nil {
			fmt.Fprintf(errOut, "rolloutplan: deployment %s: %v\n", d.Name, err)
			return exitError
		}
		results = append(results, r)
	}
	if err := report(cfg, results, out); err != nil {
		fmt.Fprintln(errOut, "rolloutplan:", err)
		return exitError
	}
	for _, r := range results {
		if (cfg.failOnStall && !r.tl.Complete) || (cfg.failOnViolation && len(r.violations) > 0) {
			return exitFail
		}
	}
	return exitOK
}

func parse(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("rolloutplan", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.file, "f", "", "the manifest (YAML or JSON; every Deployment in it is planned)")
	fs.StringVar(&c.fromImage, "from-image", "", "start from the manifest with this image")
	fs.BoolVar(&c.initial, "initial", false, "start from nothing")
	fs.DurationVar(&c.model.StartDelay, "start-delay", 0, "creation to running containers")
	fs.DurationVar(&c.model.ReadyAfter, "ready-after", 10*time.Second, "running to Ready")
	fs.DurationVar(&c.model.ReadyJitter, "ready-jitter", 0, "extra uniform readiness delay")
	fs.DurationVar(&c.model.Shutdown, "shutdown", 0, "time a deleted pod takes to stop (default: its grace period)")
	fs.Func("fail", "fraction of new pods never Ready, drawn per pod (10% or 0.1)", fraction(&c.model.NeverReady))
	fs.Func("crashloop", "fraction of new pods crash-looping, drawn per pod", fraction(&c.model.CrashLoop))
	fs.Func("bad-image", "fraction of new pods failing to pull, drawn per pod", fraction(&c.model.BadImage))
	fs.Func("scale", "what-if n@duration", func(s string) error { c.scales = append(c.scales, s); return nil })
	fs.Func("rollover", "what-if image@duration", func(s string) error { c.rollovers = append(c.rollovers, s); return nil })
	fs.Uint64Var(&c.opts.Seed, "seed", 1, "random seed")
	fs.DurationVar(&c.opts.Horizon, "horizon", time.Hour, "simulated time limit")
	maxReplicas := fs.Int("max-replicas", planner.DefaultMaxReplicas, "refuse Deployments with more replicas (the simulation runs every pod)")
	failOn := fs.String("fail-on", "stall,violation", "what exits 1: stall, violation, stall,violation or none")
	fs.StringVar(&c.output, "o", "text", "output: text or json")
	fs.StringVar(&c.svg, "svg", "", "write an SVG chart to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.file == "":
		return c, errors.New("-f is required")
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.initial && c.fromImage != "":
		return c, errors.New("-initial and -from-image exclude each other")
	case c.output != "text" && c.output != "json":
		return c, fmt.Errorf("-o %q: want text or json", c.output)
	case *maxReplicas < 1 || *maxReplicas > 1<<31-1:
		return c, fmt.Errorf("-max-replicas %d: want 1 to 2147483647", *maxReplicas)
	}
	c.opts.MaxReplicas = int32(*maxReplicas)
	for _, f := range strings.Split(*failOn, ",") {
		switch strings.TrimSpace(f) {
		case "stall":
			c.failOnStall = true
		case "violation":
			c.failOnViolation = true
		case "none", "":
		default:
			return c, fmt.Errorf("-fail-on %q: want stall, violation, stall,violation or none", *failOn)
		}
	}
	return c, nil
}

// fraction parses "10%" or "0.1" into dst.
func fraction(dst *float64) func(string) error {
	return func(s string) error {
		v, pct := strings.CutSuffix(s, "%")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("bad fraction %q", s)
		}
		if pct {
			f /= 100
		}
		if f < 0 || f > 1 {
			return fmt.Errorf("fraction %q outside 0–100%%", s)
		}
		*dst = f
		return nil
	}
}

// whatIfs parses -scale n@d and -rollover image@d.
func whatIfs(d *appsv1.Deployment, scales, rollovers []string) ([]planner.Change, error) {
	var out []planner.Change
	split := func(flag, s string) (string, time.Duration, error) {
		v, at, ok := strings.Cut(s, "@")
		t, err := time.ParseDuration(at)
		if !ok || err != nil || t < 0 {
			return "", 0, fmt.Errorf("-%s %q: want value@duration, e.g. 20@30s", flag, s)
		}
		return v, t, nil
	}
	for _, s := range scales {
		v, at, err := split("scale", s)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-scale %q: bad replica count", s)
		}
		r := int32(n)
		out = append(out, planner.Change{At: at, Replicas: &r})
	}
	for _, s := range rollovers {
		img, at, err := split("rollover", s)
		if err != nil {
			return nil, err
		}
		t := d.Spec.Template.DeepCopy()
		t.Spec.Containers[0].Image = img
		out = append(out, planner.Change{At: at, Template: t})
	}
	return out, nil
}
