package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// timeline prints what happens and keeps the statistics of the summary.
// Its methods are safe for concurrent use: events come from the
// controller's workers, pods from a watch, states from the main loop.
type timeline struct {
	out io.Writer
	clk clock.Clock
	o   options
	t0  time.Time // when the run started, on the cluster clock

	mu       sync.Mutex
	lastLine string // the last state printed, to print changes only
	pods     map[types.UID]podInfo
	created  int
	deleted  int
	events   int
	updating bool // the update phase has started
	upStart  time.Time
	upEnd    time.Time
	specs    map[types.UID]int32 // spec.replicas of every ReplicaSet
	peakSpec int32               // largest sum of specs during the update
	peak     int                 // most non-terminating pods during the update
	peakAll  int                 // most pods, terminating ones included
	minAvail int                 // fewest available pods during the update
	result   string
}

// podInfo is what the timeline remembers of a pod.
type podInfo struct{ available, terminating bool }

func newTimeline(out io.Writer, clk clock.Clock, o options) *timeline {
	return &timeline{out: out, clk: clk, o: o, t0: clk.Now(), pods: map[types.UID]podInfo{}, specs: map[types.UID]int32{}}
}

// at formats the time elapsed on the cluster clock as m:ss.s.
func (t *timeline) at() string {
	d := t.clk.Now().Sub(t.t0)
	return fmt.Sprintf("%3d:%04.1f", int(d/time.Minute), (d % time.Minute).Seconds())
}

// header describes the run.
func (t *timeline) header(d *appsv1.Deployment) {
	t.mu.Lock()
	defer t.mu.Unlock()
	surge, unavailable := t.limits(d)
	fmt.Fprintf(t.out, "deployment %s/%s: %d replicas, %s", d.Namespace, d.Name, *d.Spec.Replicas, d.Spec.Strategy.Type)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		fmt.Fprintf(t.out, " maxSurge=%s (%d) maxUnavailable=%s (%d)", ru.MaxSurge, surge, ru.MaxUnavailable, unavailable)
	}
	mode := "virtual time"
	if t.o.realtime {
		mode = "real time"
	}
	fmt.Fprintf(t.out, "\npods Ready %v after start; %s; seed %d", t.o.readyAfter, mode, t.o.seed)
	if f := t.o.fail.String(); f != "" {
		fmt.Fprintf(t.out, "; failures %s", f)
	}
	fmt.Fprintf(t.out, "\nOLD RS, NEW RS: spec/ready replicas (×n: n old ReplicaSets); PODS: running+terminating;\n"+
		"AVAILABLE: available pods of all ReplicaSets/desired (above desired while surge pods run)")
	fmt.Fprintf(t.out, "\n\n%-9s  %-8s  %-8s  %-7s  %-9s  %s\n", "TIME", "OLD RS", "NEW RS", "PODS", "AVAILABLE", "CONDITIONS / EVENTS")
}

// limits resolves d's surge and unavailability bounds; Recreate has
// neither.
func (t *timeline) limits(d *appsv1.Deployment) (surge, unavailable int32) {
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil {
		return 0, *d.Spec.Replicas
	}
	surge, unavailable, err := rollout.ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, *d.Spec.Replicas)
	if err != nil {
		return 0, 0
	}
	return surge, unavailable
}

// event prints an event of the Deployment controller.
func (t *timeline) event(eventType, reason, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events++
	mark := ""
	if eventType == corev1.EventTypeWarning {
		mark = "WARNING "
	}
	fmt.Fprintf(t.out, "%s  %-38s  event: %s%s: %s\n", t.at(), "", mark, reason, message)
}

// startUpdate marks the start of the update: the statistics start here.
func (t *timeline) startUpdate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.updating, t.upStart, t.upEnd = true, t.clk.Now(), time.Time{}
	t.peak, t.peakAll, t.peakSpec, t.minAvail = 0, 0, 0, len(t.pods)
	t.countLocked()
}

// phase runs the cluster until the rollout of image is over, printing a
// line whenever the state has changed.
func (t *timeline) phase(ctx context.Context, c *memcluster.Cluster, label, image string) error {
	t.mu.Lock()
	fmt.Fprintf(t.out, "%s  ── %s: %s\n", t.at(), label, image)
	t.mu.Unlock()
	var result error
	over := func() bool {
		d, done, err := outcome(ctx, c, image)
		if d != nil {
			t.sample(ctx, c, d)
		}
		if err != nil {
			result = err
			return true
		}
		return done
	}
	if _, virtual := t.clk.(*clock.Fake); virtual {
		if err := c.RunUntil(ctx, over, maxVirtual); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
	} else {
		tick := time.NewTicker(50 * time.Millisecond) // a demo polls the wall clock
		defer tick.Stop()
		for !over() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.upEnd = t.clk.Now()
	switch {
	case errors.Is(result, errRolloutFailed):
		t.result = "FAILED: " + strings.TrimPrefix(result.Error(), errRolloutFailed.Error()+": ")
	case result != nil:
		return result
	default:
		t.result = "rolled out " + image
	}
	return result
}

// sample prints the state of d and its ReplicaSets if it changed since
// the last line.
func (t *timeline) sample(ctx context.Context, c *memcluster.Cluster, d *appsv1.Deployment) {
	all, _, err := c.ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the next sample will do
	}
	owned := rollout.OwnedReplicaSets(d, all)
	newRS := rollout.FindNewReplicaSet(d, owned)
	_, olds := rollout.FindOldReplicaSets(d, owned)
	var oldSpec, oldReady int32
	oldActive := 0
	for _, rs := range olds {
		oldSpec += *rs.Spec.Replicas
		oldReady += rs.Status.ReadyReplicas
		if *rs.Spec.Replicas > 0 || rs.Status.Replicas > 0 {
			oldActive++
		}
	}
	oldCol, newCol := "-", "-"
	if oldActive > 0 {
		oldCol = fmt.Sprintf("%d/%d", oldSpec, oldReady)
		if oldActive > 1 {
			oldCol += fmt.Sprintf(" ×%d", oldActive)
		}
	}
	if newRS != nil {
		newCol = fmt.Sprintf("%d/%d", *newRS.Spec.Replicas, newRS.Status.ReadyReplicas)
	}
	var conds []string
	for _, cd := range d.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s)", cd.Type, cd.Status, cd.Reason))
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	active, terminating := 0, 0
	for _, p := range t.pods {
		if p.terminating {
			terminating++
		} else {
			active++
		}
	}
	podCol := fmt.Sprint(active)
	if terminating > 0 {
		podCol += fmt.Sprintf("+%d", terminating)
	}
	line := fmt.Sprintf("%-8s  %-8s  %-7s  %-9s  %s", oldCol, newCol, podCol,
		fmt.Sprintf("%d/%d", d.Status.AvailableReplicas, *d.Spec.Replicas), strings.Join(conds, " "))
	if line != t.lastLine {
		t.lastLine = line
		fmt.Fprintf(t.out, "%s  %s\n", t.at(), line)
	}
}

// follow registers the timeline's handlers, which count pods and
// ReplicaSets at every change rather than only when the timeline samples.
func (t *timeline) follow(pods *informer.Informer[*corev1.Pod], rss *informer.Informer[*appsv1.ReplicaSet]) error {
	if _, err := pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { t.observe(watch.Added, p) },
		OnUpdate: func(_, p *corev1.Pod) { t.observe(watch.Modified, p) },
		OnDelete: func(d informer.Deleted[*corev1.Pod]) { t.observe(watch.Deleted, d.Obj) },
	}); err != nil {
		return err
	}
	_, err := rss.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    func(rs *appsv1.ReplicaSet) { t.observeRS(watch.Added, rs) },
		OnUpdate: func(_, rs *appsv1.ReplicaSet) { t.observeRS(watch.Modified, rs) },
		OnDelete: func(d informer.Deleted[*appsv1.ReplicaSet]) { t.observeRS(watch.Deleted, d.Obj) },
	})
	return err
}

// observeRS records one ReplicaSet event.
func (t *timeline) observeRS(typ watch.EventType, rs *appsv1.ReplicaSet) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if typ == watch.Deleted {
		delete(t.specs, rs.UID)
	} else {
		t.specs[rs.UID] = *rs.Spec.Replicas
	}
	t.countLocked()
}

// observe records one pod event.
func (t *timeline) observe(typ watch.EventType, p *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, known := t.pods[p.UID]
	switch typ {
	case watch.Added, watch.Modified:
		if !known {
			t.created++
		}
		t.pods[p.UID] = podInfo{available: ready(p) && p.DeletionTimestamp == nil, terminating: p.DeletionTimestamp != nil}
	case watch.Deleted:
		if known {
			t.deleted++
			delete(t.pods, p.UID)
		}
	}
	t.countLocked()
}

// countLocked updates the peaks and the minimum of the update phase.
func (t *timeline) countLocked() {
	if !t.updating || !t.upEnd.IsZero() {
		return
	}
	active, avail := 0, 0
	for _, p := range t.pods {
		if !p.terminating {
			active++
		}
		if p.available {
			avail++
		}
	}
	var spec int32
	for _, n := range t.specs {
		spec += n
	}
	t.peakSpec = max(t.peakSpec, spec)
	t.peak, t.peakAll = max(t.peak, active), max(t.peakAll, len(t.pods))
	t.minAvail = min(t.minAvail, avail)
}

// summary prints the statistics of the update.
func (t *timeline) summary() {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := newDeployment(t.o)
	surge, unavailable := t.limits(d)
	replicas := *d.Spec.Replicas
	end := t.upEnd
	if end.IsZero() {
		end = t.clk.Now()
	}
	clockName := "virtual time"
	if t.o.realtime {
		clockName = "real time"
	}
	fmt.Fprintf(t.out, "\nsummary of the update\n")
	fmt.Fprintf(t.out, "  result         %s\n", t.result)
	fmt.Fprintf(t.out, "  duration       %v of %s\n", end.Sub(t.upStart).Round(100*time.Millisecond), clockName)
	fmt.Fprintf(t.out, "  peak replicas  %d (limit %d+%d): the sum of the ReplicaSets' spec.replicas\n", t.peakSpec, replicas, surge)
	fmt.Fprintf(t.out, "  peak pods      %d (limit %d+%d), %d with terminating ones: maxSurge does not count\n"+
		"                 terminating pods (as upstream), which run until their grace period ends\n", t.peak, replicas, surge, t.peakAll)
	fmt.Fprintf(t.out, "  min available  %d (limit %d-%d)\n", t.minAvail, replicas, unavailable)
	fmt.Fprintf(t.out, "  pods           %d created, %d deleted over the whole run; %d deployment events\n", t.created, t.deleted, t.events)
}

// ready reports whether p's Ready condition is True.
func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
