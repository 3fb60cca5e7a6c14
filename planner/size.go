package planner

import (
	"errors"
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// ErrTooLarge is returned (wrapped) by [Simulate] for a Deployment it will not
// simulate: more replicas than [Options.MaxReplicas], or a size the
// controller's int32 arithmetic overflows on.
var ErrTooLarge = errors.New("planner: deployment too large to plan")

// checkSize refuses what Plan cannot simulate in reasonable time, and
// sizes on which the controller overflows.
func checkSize(d *appsv1.Deployment, opts Options) error {
	sizes := []int32{replicas(d.Spec.Replicas)}
	for _, c := range opts.Changes {
		if c.Replicas != nil {
			sizes = append(sizes, *c.Replicas)
		}
	}
	limit := opts.MaxReplicas
	if limit == 0 {
		limit = DefaultMaxReplicas
	}
	for _, n := range sizes {
		if err := overflow(d, n); err != nil {
			return err
		}
		if limit > 0 && n > limit {
			return fmt.Errorf("%w: %d replicas is above the limit of %d: the simulation runs every pod and its cost grows faster than linearly "+
				"(about 9 s for 5,000 replicas); raise the limit (Options.MaxReplicas) to plan it anyway, progress is reported through Options.Progress", ErrTooLarge, n, limit)
		}
	}
	return nil
}

// overflow reports replicas + maxSurge beyond int32: upstream's
// NewRSNewReplicas adds them in int32, gets a negative maximum and never
// scales the new ReplicaSet up; package rollout matches upstream, so the
// rollout would not progress, and there is nothing to simulate.
func overflow(d *appsv1.Deployment, n int32) error {
	if !rollout.IsRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil {
		return nil
	}
	surge := d.Spec.Strategy.RollingUpdate.MaxSurge
	if surge == nil {
		v := intstr.FromString("25%")
		surge = &v
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(surge, int(n), true)
	if err != nil {
		return nil // reported by the controller as an invalid spec
	}
	if int64(n)+int64(s) > math.MaxInt32 {
		return fmt.Errorf("%w: spec.replicas %d + maxSurge %d = %d overflows int32: the Deployment controller (upstream's, and ctrlkit's, which matches it) "+
			"computes a negative maximum pod count and never scales the new ReplicaSet up, so this rollout would never progress; lower replicas or maxSurge",
			ErrTooLarge, n, s, int64(n)+int64(s))
	}
	return nil
}

func (f *Faults) count(fail memcluster.PodFailure) {
	f.Pods++
	switch fail {
	case memcluster.PodNeverReady:
		f.NeverReady++
	case memcluster.PodCrashLoop:
		f.CrashLoop++
	case memcluster.PodBadImage:
		f.BadImage++
	}
}

// progress reports the instant reached to Options.Progress.
func (s *sim) progress(d *appsv1.Deployment) {
	if s.opts.Progress == nil {
		return
	}
	p := Progress{At: s.clk.Now().Sub(s.tl.Start), Horizon: s.opts.Horizon, Replicas: replicas(d.Spec.Replicas)}
	p.Updated, p.Available = d.Status.UpdatedReplicas, d.Status.AvailableReplicas
	s.opts.Progress(p)
}
