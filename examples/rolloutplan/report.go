package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// report writes every result as text or JSON, and the charts.
func report(cfg config, results []result, out io.Writer) error {
	var charts []string
	if cfg.svg != "" {
		for _, r := range results {
			path := cfg.svg
			if len(results) > 1 {
				ext := filepath.Ext(path)
				path = strings.TrimSuffix(path, ext) + "-" + r.d.Name + ext
			}
			if err := writeChart(path, r); err != nil {
				return err
			}
			charts = append(charts, path)
		}
	}
	if cfg.output == "json" {
		var docs []jsonResult
		for _, r := range results {
			docs = append(docs, toJSON(cfg, r))
		}
		b, err := json.MarshalIndent(docs, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s\n\n", describe(r.d, r.from))
		r.tl.WriteTable(out)
		fmt.Fprintf(out, "invariants: %d violations\n", len(r.violations))
		for _, v := range r.violations {
			fmt.Fprintf(out, "  %s\n", v)
		}
		for _, line := range faultReport(cfg, r.tl.Faults) {
			fmt.Fprintln(out, line)
		}
	}
	for _, c := range charts {
		fmt.Fprintf(out, "chart written to %s\n", c)
	}
	return nil
}

func writeChart(path string, r result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSVG(f, r.d, r.tl); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// faultReport says what each non-zero failure fraction drew: fractions
// apply per pod, so a small one over few pods can hit none, and the
// reader must know.
func faultReport(cfg config, f planner.Faults) []string {
	var out []string
	for _, x := range []struct {
		what string
		p    float64
		hit  int
	}{{"never Ready", cfg.model.NeverReady, f.NeverReady}, {"crash-looping", cfg.model.CrashLoop, f.CrashLoop}, {"bad image", cfg.model.BadImage, f.BadImage}} {
		if x.p == 0 {
			continue
		}
		line := fmt.Sprintf("fault model: %s %g%% per new pod (seed %d): %d of %d new pods drawn %s (expected %.1f)",
			x.what, x.p*100, cfg.opts.Seed, x.hit, f.Pods, x.what, x.p*float64(f.Pods))
		if x.hit == 0 {
			line += "; none was hit, so this plan shows no such failure: try other -seed values or a larger fraction"
		}
		out = append(out, line)
	}
	return out
}

func describe(d *appsv1.Deployment, from string) string {
	strategy := string(d.Spec.Strategy.Type)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		strategy += fmt.Sprintf(" maxSurge=%s maxUnavailable=%s", ru.MaxSurge, ru.MaxUnavailable)
	}
	return fmt.Sprintf("deployment %s: %d replicas, %s, image %s, from %s",
		d.Name, *d.Spec.Replicas, strategy, d.Spec.Template.Spec.Containers[0].Image, from)
}

// jsonResult is the -o json form of one plan.
type jsonResult struct {
	Deployment   string        `json:"deployment"`
	From         string        `json:"from"`
	Replicas     int32         `json:"replicas"`
	Complete     bool          `json:"complete"`
	Duration     string        `json:"duration,omitempty"`
	DurationSec  float64       `json:"durationSeconds,omitempty"`
	PeakPods     int32         `json:"peakPods"`
	PeakSpec     int32         `json:"peakSpec"`
	MaxSpec      int32         `json:"maxSpec"`
	MinAvailable int32         `json:"minAvailable"`
	MinBound     int32         `json:"minAvailableBound"`
	Faults       jsonFaults    `json:"faults"`
	Stall        []jsonBlocker `json:"stall,omitempty"`
	Violations   []string      `json:"violations"`
	Steps        []jsonStep    `json:"steps"`
}

type jsonFaults struct {
	Seed       uint64    `json:"seed"`
	NewPods    int       `json:"newPods"`
	NeverReady int       `json:"neverReady"`
	CrashLoop  int       `json:"crashLoop"`
	BadImage   int       `json:"badImage"`
	Fractions  []float64 `json:"fractions"`
}

type jsonBlocker struct {
	Code    planner.BlockerCode `json:"code"`
	Message string              `json:"message"`
}

type jsonStep struct {
	AtSeconds   float64  `json:"atSeconds"`
	ReplicaSets []jsonRS `json:"replicaSets"`
	Pods        int32    `json:"pods"`
	Available   int32    `json:"available"`
	Events      []string `json:"events,omitempty"`
}

type jsonRS struct {
	Name        string `json:"name"`
	Revision    int64  `json:"revision"`
	New         bool   `json:"new,omitempty"`
	Spec        int32  `json:"spec"`
	Ready       int32  `json:"ready"`
	Available   int32  `json:"available"`
	Terminating int32  `json:"terminating"`
}

func toJSON(cfg config, r result) jsonResult {
	surge, _ := rollout.MaxSurge(r.d)
	minAvail, _ := rollout.MinAvailable(r.d)
	j := jsonResult{Deployment: r.d.Name, From: r.from, Replicas: *r.d.Spec.Replicas, Complete: r.tl.Complete,
		PeakPods: r.tl.PeakPods, PeakSpec: r.tl.PeakSpec, MaxSpec: *r.d.Spec.Replicas + surge,
		MinAvailable: r.tl.MinAvailable, MinBound: minAvail, Violations: []string{},
		Faults: jsonFaults{Seed: cfg.opts.Seed, NewPods: r.tl.Faults.Pods, NeverReady: r.tl.Faults.NeverReady,
			CrashLoop: r.tl.Faults.CrashLoop, BadImage: r.tl.Faults.BadImage,
			Fractions: []float64{cfg.model.NeverReady, cfg.model.CrashLoop, cfg.model.BadImage}}}
	if r.tl.Complete {
		j.Duration, j.DurationSec = r.tl.Duration.String(), r.tl.Duration.Seconds()
	}
	if r.tl.Stall != nil {
		for _, b := range r.tl.Stall.Blockers {
			j.Stall = append(j.Stall, jsonBlocker{Code: b.Code, Message: b.Message})
		}
	}
	for _, v := range r.violations {
		j.Violations = append(j.Violations, v.String())
	}
	for _, st := range r.tl.Steps {
		_, pods, avail, term := st.Totals()
		s := jsonStep{AtSeconds: st.Time.Sub(r.tl.Start).Round(time.Millisecond).Seconds(), Pods: pods + term, Available: avail, Events: st.Events}
		for _, rs := range st.ReplicaSets {
			s.ReplicaSets = append(s.ReplicaSets, jsonRS{Name: rs.Name, Revision: rs.Revision, New: rs.New, Spec: rs.Spec,
				Ready: rs.Ready, Available: rs.Available, Terminating: rs.Terminating})
		}
		j.Steps = append(j.Steps, s)
	}
	return j
}
