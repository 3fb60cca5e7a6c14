package main

import (
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/planner"
)

// result is the plan of one Deployment.
type result struct {
	d          *appsv1.Deployment
	from       string
	tl         planner.Timeline
	violations []planner.Violation
}

// plan simulates the rollout of d from the start cfg describes; progress
// goes to errOut for big Deployments.
func plan(cfg config, d *appsv1.Deployment, errOut io.Writer) (result, error) {
	changes, err := whatIfs(d, cfg.scales, cfg.rollovers)
	if err != nil {
		return result{}, err
	}
	opts := cfg.opts
	opts.Changes = changes
	if n := *d.Spec.Replicas; n >= 1000 {
		opts.Progress = progressPrinter(d.Name, errOut)
	}
	var current []*appsv1.ReplicaSet
	if !cfg.initial {
		prev := d.Spec.Template.DeepCopy()
		if cfg.fromImage != "" {
			prev.Spec.Containers[0].Image = cfg.fromImage
		} else {
			delete(prev.Annotations, restartedAtKey)
			if d.Spec.Template.Annotations == nil {
				d.Spec.Template.Annotations = map[string]string{}
			}
			d.Spec.Template.Annotations[restartedAtKey] = restartedAt
		}
		rs, err := planner.Previous(d, *prev)
		if err != nil {
			return result{}, err
		}
		current = []*appsv1.ReplicaSet{rs}
	}
	tl, err := planner.Simulate(d, current, cfg.model, opts)
	if errors.Is(err, planner.ErrTooLarge) && *d.Spec.Replicas > opts.MaxReplicas {
		return result{}, fmt.Errorf("%w (rolloutplan: -max-replicas %d)", err, *d.Spec.Replicas)
	}
	if err != nil {
		return result{}, err
	}
	return result{d: d, from: describeFrom(cfg), tl: tl, violations: planner.Check(tl.Trace(), d)}, nil
}

// progressPrinter reports each tenth of the replicas that becomes
// available, in virtual time: deterministic, and enough to show that a
// long plan is moving.
func progressPrinter(name string, w io.Writer) func(planner.Progress) {
	last := int32(-1)
	return func(p planner.Progress) {
		if p.Replicas == 0 {
			return
		}
		tenth := p.Available * 10 / p.Replicas
		if tenth == last {
			return
		}
		last = tenth
		fmt.Fprintf(w, "rolloutplan: planning %s: +%s simulated, %d of %d updated, %d available\n",
			name, p.At, p.Updated, p.Replicas, p.Available)
	}
}

func describeFrom(cfg config) string {
	switch {
	case cfg.initial:
		return "nothing (new deployment)"
	case cfg.fromImage != "":
		return "image " + cfg.fromImage
	}
	return "a restart (kubectl rollout restart)"
}
