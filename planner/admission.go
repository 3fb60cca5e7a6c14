package planner

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// admitPod is the simulation's admission of a pod creation: the limit
// ranges' defaults, then, after the start, the quotas (Options.Quotas),
// charged with the pods the simulation holds and the Outside pods still
// there. It counts refusals.
func (s *sim) admitPod(ctx context.Context, pod *corev1.Pod) error {
	ApplyLimitRanges(pod, s.opts.LimitRanges)
	if s.setup || len(s.opts.Quotas) == 0 {
		return nil
	}
	now := s.clk.Now()
	used, err := s.held.used(now)
	if err != nil {
		return err
	}
	outside, err := s.outsideUsed(now)
	if err != nil {
		return err
	}
	for i := range used {
		addList(used[i], outside[i])
	}
	rs := ""
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		rs = ref.Name
	}
	if err := admit(s.opts.Quotas, pod, used, now); err != nil {
		if !s.refusing[rs] {
			s.tl.Refused++ // retried until a creation succeeds: one wait
			s.refusing[rs] = true
		}
		return err
	}
	delete(s.refusing, rs)
	return nil
}

// shiftOutside returns the Outside pods with their times moved to the
// simulation's clock: Options.Now becomes the start.
func (s *sim) shiftOutside() []*corev1.Pod {
	shift := func(t *metav1.Time) *metav1.Time {
		if t == nil {
			return nil
		}
		return ptr(metav1.NewTime(s.tl.Start.Add(t.Sub(s.opts.Now))))
	}
	var out []*corev1.Pod
	for _, p := range s.opts.Outside {
		if p == nil {
			continue
		}
		c := p.DeepCopy()
		c.CreationTimestamp = *shift(&c.CreationTimestamp)
		c.DeletionTimestamp = shift(c.DeletionTimestamp)
		out = append(out, c)
	}
	return out
}

// outsideGone reports whether an Outside pod has been removed at now: it
// was deleted, has no finalizers, and its grace period has ended.
func outsideGone(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && len(p.Finalizers) == 0 && !now.Before(p.DeletionTimestamp.Time)
}

// outsideChanges are the instants after the start at which an Outside
// pod stops counting in some way (removed, or past its grace period while
// finalizers hold it), sorted: the simulation moves to them, since a
// creation a quota refused may fit then.
func (s *sim) outsideChanges() []time.Time {
	var out []time.Time
	for _, p := range s.outsidePods {
		if p.DeletionTimestamp == nil {
			continue
		}
		at := p.DeletionTimestamp.Time
		if len(p.Finalizers) > 0 && p.DeletionGracePeriodSeconds != nil {
			at = at.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second + time.Nanosecond)
		}
		if at.After(s.tl.Start) {
			out = append(out, at)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.Compact(out)
}

// availabilityRequeue schedules the sync of rs for when its next Ready
// pod has been Ready minReadySeconds: a sync that failed on a refused
// creation returns no requeue of its own.
func (s *sim) availabilityRequeue(ctx context.Context, rs *appsv1.ReplicaSet, now time.Time) error {
	if rs.Spec.MinReadySeconds <= 0 {
		return nil
	}
	pods, _, err := s.c.Pods(s.key.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var next time.Time
	for _, p := range controlledBy(rs.UID, pods) {
		if p.DeletionTimestamp != nil || !replicaset.IsPodReady(p) || replicaset.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				if at := c.LastTransitionTime.Add(time.Duration(rs.Spec.MinReadySeconds) * time.Second); next.IsZero() || at.Before(next) {
					next = at
				}
			}
		}
	}
	if next.After(now) {
		s.requeue("rs/"+rs.Name, now, next.Sub(now))
	}
	return nil
}

// outsideUsed is what the Outside pods still there at now are charged,
// per quota. It changes only at the instants of s.outside: the sums are
// kept until the next one.
func (s *sim) outsideUsed(now time.Time) ([]corev1.ResourceList, error) {
	if s.outsideSums != nil && now.Before(s.outsideUntil) && !now.Before(s.outsideFrom) {
		return s.outsideSums, nil
	}
	sums := make([]corev1.ResourceList, len(s.opts.Quotas))
	for i, q := range s.opts.Quotas {
		sums[i] = corev1.ResourceList{}
		for _, p := range s.outsidePods {
			if outsideGone(p, now) {
				continue
			}
			c, err := q.charge(p, now)
			if err != nil {
				return nil, err
			}
			addList(sums[i], c)
		}
	}
	s.outsideSums, s.outsideFrom, s.outsideUntil = sums, now, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, t := range s.outside {
		if t.After(now) {
			s.outsideUntil = t
			break
		}
	}
	return sums, nil
}
