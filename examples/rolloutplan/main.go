// Command rolloutplan predicts, step by step, what a Deployment rollout
// will do, by running this module's Deployment and ReplicaSet controllers
// in virtual time (package planner).
//
//	go run ./examples/rolloutplan -f deployment.yaml [flags]
//
// The manifest (YAML or JSON, one apps/v1 Deployment) describes the
// version being rolled out. The rollout starts from a complete rollout of
// the previous version, which is, by default, the same template without
// the kubectl.kubernetes.io/restartedAt annotation (the rollout `kubectl
// rollout restart` triggers); with -from-image, the same template with
// the first container's image replaced (an image update); with -initial,
// nothing (a new Deployment).
//
// It prints the timeline as a table, the invariant check and, if the
// rollout does not finish within -horizon, why it is stuck; -svg writes a
// chart of the old and new ReplicaSets' sizes and availability.
//
// Flags:
//
//	-f file           the Deployment manifest (required)
//	-from-image img   start from the manifest with this image
//	-initial          start from nothing
//	-start-delay d    creation to running containers (default 0)
//	-ready-after d    running to Ready (default 10s)
//	-ready-jitter d   extra uniform readiness delay per pod (default 0)
//	-fail p           fraction of new pods never Ready (10% or 0.1)
//	-crashloop p      fraction of new pods crash-looping
//	-bad-image p      fraction of new pods failing to pull their image
//	-shutdown d       time a deleted pod takes to stop (default: its grace period)
//	-scale n@d        what-if: set replicas to n at time d (e.g. 20@30s)
//	-rollover img@d   what-if: push image img at time d
//	-seed n           random seed (default 1)
//	-horizon d        simulated time limit (default 1h)
//	-svg file         write an SVG chart
package main

import (
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
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rolloutplan:", err)
		os.Exit(1)
	}
}

// restartedAt is the annotation value of the default "restart" rollout;
// fixed, so that output is reproducible.
const restartedAt = "2026-01-01T00:00:00Z"

// run is the command: it parses args, plans and writes the report to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rolloutplan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "Deployment manifest (YAML or JSON)")
	fromImage := fs.String("from-image", "", "start from the manifest with this image")
	initial := fs.Bool("initial", false, "start from nothing")
	var model planner.PodModel
	fs.DurationVar(&model.StartDelay, "start-delay", 0, "creation to running containers")
	fs.DurationVar(&model.ReadyAfter, "ready-after", 10*time.Second, "running to Ready")
	fs.DurationVar(&model.ReadyJitter, "ready-jitter", 0, "extra uniform readiness delay")
	fs.DurationVar(&model.Shutdown, "shutdown", 0, "time a deleted pod takes to stop")
	fs.Func("fail", "fraction of new pods never Ready", fraction(&model.NeverReady))
	fs.Func("crashloop", "fraction of new pods crash-looping", fraction(&model.CrashLoop))
	fs.Func("bad-image", "fraction of new pods failing to pull", fraction(&model.BadImage))
	var opts planner.Options
	var scales, rollovers []string
	fs.Func("scale", "what-if n@duration", func(s string) error { scales = append(scales, s); return nil })
	fs.Func("rollover", "what-if image@duration", func(s string) error { rollovers = append(rollovers, s); return nil })
	fs.Uint64Var(&opts.Seed, "seed", 1, "random seed")
	fs.DurationVar(&opts.Horizon, "horizon", time.Hour, "simulated time limit")
	svgPath := fs.String("svg", "", "write an SVG chart to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("-f is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *initial && *fromImage != "" {
		return fmt.Errorf("-initial and -from-image exclude each other")
	}
	d, err := readDeployment(*file)
	if err != nil {
		return err
	}
	changes, err := whatIfs(d, scales, rollovers)
	if err != nil {
		return err
	}
	opts.Changes = changes
	var current []*appsv1.ReplicaSet
	if !*initial {
		prev := d.Spec.Template.DeepCopy()
		if *fromImage != "" {
			prev.Spec.Containers[0].Image = *fromImage
		} else {
			delete(prev.Annotations, restartedAtKey)
			if d.Spec.Template.Annotations == nil {
				d.Spec.Template.Annotations = map[string]string{}
			}
			d.Spec.Template.Annotations[restartedAtKey] = restartedAt
		}
		rs, err := planner.Previous(d, *prev)
		if err != nil {
			return err
		}
		current = []*appsv1.ReplicaSet{rs}
	}
	tl, err := planner.Plan(d, current, model, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n\n", describe(d, *fromImage, *initial))
	tl.WriteTable(out)
	violations := planner.Check(tl.Trace(), d)
	fmt.Fprintf(out, "invariants: %d violations\n", len(violations))
	for _, v := range violations {
		fmt.Fprintf(out, "  %s\n", v)
	}
	if *svgPath != "" {
		f, err := os.Create(*svgPath)
		if err != nil {
			return err
		}
		if err := writeSVG(f, tl); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(out, "chart written to %s\n", *svgPath)
	}
	return nil
}

const restartedAtKey = "kubectl.kubernetes.io/restartedAt"

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

func describe(d *appsv1.Deployment, fromImage string, initial bool) string {
	from := "a restart (kubectl rollout restart)"
	switch {
	case initial:
		from = "nothing (new deployment)"
	case fromImage != "":
		from = "image " + fromImage
	}
	strategy := string(d.Spec.Strategy.Type)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		strategy += fmt.Sprintf(" maxSurge=%s maxUnavailable=%s", ru.MaxSurge, ru.MaxUnavailable)
	}
	return fmt.Sprintf("deployment %s: %d replicas, %s, image %s, from %s",
		d.Name, *d.Spec.Replicas, strategy, d.Spec.Template.Spec.Containers[0].Image, from)
}
