package planner

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/rollout"
)

func everything() labels.Selector { return labels.Everything() }

// run creates the Deployment at the start and simulates until the end
// (see Plan).
func (s *sim) run(ctx context.Context, in *appsv1.Deployment) (Timeline, error) {
	d := &appsv1.Deployment{Spec: *in.Spec.DeepCopy()}
	d.Name, d.Namespace = in.Name, s.key.Namespace
	d.Labels, d.Annotations = maps.Clone(in.Labels), maps.Clone(in.Annotations)

	// Step 0: the state before the rollout, against the input Deployment.
	rss, err := s.api.List(s.key.Namespace, everything())
	if err != nil {
		return Timeline{}, err
	}
	s.tl.Steps = append(s.tl.Steps, stepFrom(s.tl.Start, d, rss))
	s.prevRSs, s.prevReplicas = rss, replicas(d.Spec.Replicas)
	if _, err := s.c.Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return Timeline{}, fmt.Errorf("planner: create deployment: %w", err)
	}

	changes := slices.Clone(s.opts.Changes)
	slices.SortStableFunc(changes, func(a, b Change) int { return cmp.Compare(a.At, b.At) })
	end := s.tl.Start.Add(s.opts.Horizon)
	var completeSince time.Time
	complete := false
	for {
		now := s.clk.Now()
		for len(changes) > 0 && !s.tl.Start.Add(changes[0].At).After(now) {
			if err := s.apply(ctx, changes[0]); err != nil {
				return Timeline{}, err
			}
			changes = changes[1:]
		}
		next, err := s.settle(ctx, true)
		if err != nil {
			return Timeline{}, err
		}
		cur, err := s.api.Get(s.key)
		if err != nil {
			return Timeline{}, err
		}
		isComplete := rollout.DeploymentComplete(cur, cur.Status)
		if isComplete && !complete {
			completeSince = now
		}
		complete = isComplete
		if len(changes) > 0 {
			if t := s.tl.Start.Add(changes[0].At); next.IsZero() || t.Before(next) {
				next = t
			}
		}
		last := s.tl.Steps[len(s.tl.Steps)-1]
		_, _, _, terminating := last.Totals()
		if complete && len(changes) == 0 && terminating == 0 {
			break
		}
		if next.IsZero() || next.After(end) {
			if !next.IsZero() {
				s.clk.SetTime(end)
			}
			break
		}
		s.clk.SetTime(next)
		s.progress(cur)
	}
	s.summarize(complete && len(changes) == 0, completeSince)
	if s.tl.Complete {
		return s.tl, nil
	}
	return s.tl, s.stall(ctx)
}

// apply makes one what-if Change to the Deployment.
func (s *sim) apply(ctx context.Context, c Change) error {
	d, err := s.api.Get(s.key)
	if err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	if c.Replicas != nil {
		d.Spec.Replicas = ptr(*c.Replicas)
	}
	if c.Template != nil {
		d.Spec.Template = *c.Template.DeepCopy()
	}
	if c.Paused != nil {
		d.Spec.Paused = *c.Paused
	}
	if _, err := s.api.UpdateDeployment(ctx, d); err != nil {
		return fmt.Errorf("planner: %s: %w", c, err)
	}
	s.events = append(s.events, c.String())
	return nil
}

// summarize fills the timeline's totals.
func (s *sim) summarize(complete bool, since time.Time) {
	t := &s.tl
	t.Complete = complete
	if complete {
		t.Duration = since.Sub(t.Start)
	}
	t.MinAvailable = math.MaxInt32
	for _, st := range t.Steps {
		spec, pods, avail, term := st.Totals()
		t.PeakPods = max(t.PeakPods, pods+term)
		t.PeakSpec = max(t.PeakSpec, spec)
		t.MinAvailable = min(t.MinAvailable, avail)
	}
}

// stall records where the rollout stopped moving and why.
func (s *sim) stall(ctx context.Context) error {
	d, err := s.api.Get(s.key)
	if err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	rss, err := s.api.List(s.key.Namespace, everything())
	if err != nil {
		return err
	}
	pods, _, err := s.c.Pods(s.key.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	last := 0
	for i := 1; i < len(s.tl.Steps); i++ {
		if progressed(s.tl.Steps[i-1], s.tl.Steps[i]) {
			last = i
		}
	}
	now := s.clk.Now()
	s.tl.Stall = &Stall{Step: last, At: now, Blockers: Explain(d, rss, pods, now)}
	return nil
}

// progressed reports whether some ReplicaSet's size or availability
// differs between a and b.
func progressed(a, b Step) bool {
	if len(a.ReplicaSets) != len(b.ReplicaSets) {
		return true
	}
	for i := range a.ReplicaSets {
		x, y := a.ReplicaSets[i], b.ReplicaSets[i]
		if x.Name != y.Name || x.Spec != y.Spec || x.Available != y.Available {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
