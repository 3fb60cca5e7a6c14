package plugin

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// fightWindow is how recent the evidence of a fight must be: the event
// recorder's aggregation window (client-go folds repeats of an event into
// its count for ten minutes).
const fightWindow = 10 * time.Minute

// lastAppliedAnnotation is where `kubectl apply` (client-side) keeps the
// manifest it applied last.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

var scaledRE = regexp.MustCompile(`^Scaled (up|down) replica set (\S+) from (\d+) to (\d+)`)

// scaling is one ScalingReplicaSet event of the deployment controller,
// with its repeats folded in.
type scaling struct {
	rs          string
	up          bool
	from, to    int64
	count       int32
	first, last time.Time
}

// eventSpan returns how often an event happened and its first and last
// time, from the core/v1 fields or the events.k8s.io series.
func eventSpan(e *corev1.Event) (count int32, first, last time.Time) {
	count = max(e.Count, 1)
	first, last = e.FirstTimestamp.Time, e.LastTimestamp.Time
	if !e.EventTime.IsZero() {
		if first.IsZero() {
			first = e.EventTime.Time
		}
		if e.EventTime.After(last) {
			last = e.EventTime.Time
		}
	}
	if s := e.Series; s != nil {
		count = max(count, s.Count)
		if s.LastObservedTime.After(last) {
			last = s.LastObservedTime.Time
		}
	}
	if first.IsZero() {
		first = last
	}
	return count, first, last
}

// scalings parses the deployment controller's ScalingReplicaSet events
// about d.
func scalings(d *appsv1.Deployment, events []*corev1.Event) []scaling {
	var out []scaling
	for _, e := range events {
		io := e.InvolvedObject
		if io.Kind != "Deployment" || io.Name != d.Name || (io.UID != "" && d.UID != "" && io.UID != d.UID) || e.Reason != "ScalingReplicaSet" {
			continue
		}
		m := scaledRE.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		from, _ := strconv.ParseInt(m[3], 10, 32)
		to, _ := strconv.ParseInt(m[4], 10, 32)
		s := scaling{rs: m[2], up: m[1] == "up", from: from, to: to}
		s.count, s.first, s.last = eventSpan(e)
		out = append(out, s)
	}
	return out
}

// flap is a ReplicaSet scaled up and down again and again: an up and a
// down event whose times interleave, one of them repeated.
type flap struct {
	up, down scaling
}

// flaps finds, for each ReplicaSet, the strongest up/down pair that shows
// it being scaled back and forth within the fight window: at least four
// scalings in all, one message repeated (the same scale happened again),
// and the two spans overlapping (so the directions alternated; a single
// rollback scales up, then down, without overlap).
func flaps(ss []scaling, now time.Time) []flap {
	var out []flap
	byRS := map[string][]scaling{}
	var order []string
	for _, s := range ss {
		if _, ok := byRS[s.rs]; !ok {
			order = append(order, s.rs)
		}
		byRS[s.rs] = append(byRS[s.rs], s)
	}
	for _, rs := range order {
		var best *flap
		for _, u := range byRS[rs] {
			for _, dn := range byRS[rs] {
				if !u.up || dn.up || u.count+dn.count < 4 || max(u.count, dn.count) < 2 {
					continue
				}
				// One-second timestamps: spans that touch overlap.
				if u.first.After(dn.last.Add(time.Second)) || dn.first.After(u.last.Add(time.Second)) {
					continue
				}
				if now.Sub(later(u.last, dn.last)) > fightWindow {
					continue
				}
				if best == nil || u.count+dn.count > best.up.count+best.down.count {
					best = &flap{up: u, down: dn}
				}
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// DefaultObserve is the default of why's --observe: the longest it
// watches a Deployment whose spec.replicas flips, to name the writers.
const DefaultObserve = 20 * time.Second

// FightDecay is how many flip periods spec.replicas (or the template)
// must stay unchanged before a fight counts as over: once the last
// flip is FightDecay times the observed flip period old (the fight's span
// over its flips, at least a second), the evidence decays: the fight is
// reported as over, a warning that says when it last flipped, and no
// longer blocks. It never lasts beyond fightWindow.
const FightDecay = 10

// fight is the evidence of two writers taking turns on the spec, from the
// deployment controller's scaling events.
type fight struct {
	flaps []flap
	// replicas is true for a fight over spec.replicas (one ReplicaSet
	// scaled between two sizes); false for one over the template (the
	// controller rolls from one ReplicaSet to the other and back).
	replicas bool
	// first and last are the first and the last flip (the last scaling
	// event, or a later write of the field in managedFields); flips
	// counts the scaling events, span is their span.
	first, last time.Time
	flips       int32
	span        time.Duration
	// period is the mean time between flips (at least a second); over
	// says the last flip is FightDecay periods old.
	period time.Duration
	over   bool
}

// decay is how long after the last flip the fight counts as over.
func (f *fight) decay() time.Duration { return min(FightDecay*f.period, fightWindow) }

// findFight finds a fight in d's scaling events at now, if any; rss are
// the ReplicaSets read with d.
func findFight(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, events []*corev1.Event, now time.Time) *fight {
	fl := flaps(scalings(d, events), now)
	if len(fl) == 0 {
		return nil
	}
	f := &fight{flaps: fl, replicas: len(fl) == 1 && fl[0].up.from != 0 && fl[0].down.to != 0,
		first: fl[0].up.first, last: fl[0].up.last}
	for _, x := range fl {
		f.flips += x.up.count + x.down.count
		for _, t := range []time.Time{x.up.first, x.down.first} {
			if t.Before(f.first) {
				f.first = t
			}
		}
		for _, t := range []time.Time{x.up.last, x.down.last} {
			if t.After(f.last) {
				f.last = t
			}
		}
	}
	f.span, f.period = f.last.Sub(f.first), time.Second
	if f.flips > 1 {
		f.period = max(f.span/time.Duration(f.flips-1), time.Second)
	}
	// The event recorder's spam filter (25 events per object, then one
	// per 5 minutes) stops the scaling events of a long fight. A later
	// write of the fought field flipped it later: its writer's time in
	// managedFields (writes through /scale record none), or, for
	// spec.replicas, the controller's last write of the flapping
	// ReplicaSet's size while that size is one of the fight's two.
	flippedAt := func(ws []writer, owns func(writer) bool) {
		for _, w := range ws {
			if w.subresource != "status" && owns(w) && w.at.After(f.last) && !w.at.After(now) {
				f.last = w.at
			}
		}
	}
	flippedAt(writers(d), func(w writer) bool { return (f.replicas && w.replicas) || (!f.replicas && w.template) })
	if f.replicas {
		x := fl[0]
		for _, rs := range rss {
			if n := int64(replicas(rs.Spec.Replicas)); rs.Name == x.up.rs && (n == x.up.from || n == x.up.to) {
				flippedAt(writers(rs), func(w writer) bool { return w.replicas })
			}
		}
	}
	f.over = now.Sub(f.last) >= f.decay()
	return f
}

// ObserveFor is how long Fetch should watch d (with its ReplicaSets rss)
// to see the writers of a fight over spec.replicas that is going on at
// now: three flip periods, at most limit; zero when there is no such
// fight. Pure: Fetch's shell calls it.
func ObserveFor(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, events []*corev1.Event, now time.Time, limit time.Duration) time.Duration {
	f := findFight(d, rss, events, now)
	if f == nil || f.over || !f.replicas || limit <= 0 {
		return 0
	}
	return min(3*f.period, limit)
}

// specFight reports a spec that keeps changing because two writers
// disagree: the deployment controller's scaling events show a ReplicaSet
// scaled back and forth. For a fight over spec.replicas, the writers are
// every manager seen setting it: in the updates Fetch watched
// (State.ReplicasWrites) and in managedFields (who owns it now), the
// HorizontalPodAutoscalers that target the Deployment; managers that
// only own other fields (the template) are not named. For a fight over
// the template, the recent writers of spec fields. When fewer than two
// writers are known, what the object records hints at the other one
// (kubectl's last-applied-configuration, GitOps markers, its
// controller). A fight whose last flip is FightDecay flip periods old is
// over: a warning that says when it last flipped. Without flapping, an
// autoscaler next to a manifest that also sets spec.replicas is a
// warning: every apply resets the autoscaler's choice.
func specFight(d *appsv1.Deployment, st *State, now time.Time) []Cause {
	f := findFight(d, st.ReplicaSets, st.Events, now)
	_, appliedReplicas := lastApplied(d)
	if f == nil {
		// A GitOps tool's markers do not say whether its manifest sets
		// replicas (it may ignore the field): only kubectl's record does.
		if len(st.Autoscalers) == 0 || appliedReplicas == nil {
			return nil
		}
		h := st.Autoscalers[0]
		return []Cause{{Code: SpecFight, Severity: Warning,
			Message: fmt.Sprintf("HorizontalPodAutoscaler %s manages spec.replicas, and the manifest applied by kubectl apply sets it too "+
				"(replicas: %d in kubectl's last-applied-configuration): every apply resets the autoscaler's choice", h.Name, *appliedReplicas),
			Objects: []string{"deployment/" + d.Name, "horizontalpodautoscaler/" + h.Name},
			Fix:     fightFix(d, true)}}
	}
	field := "spec.replicas"
	if !f.replicas {
		field = "the pod template (spec.template)"
	}
	var seen []string
	for _, x := range f.flaps {
		seen = append(seen, fmt.Sprintf("%s scaled %d→%d ×%d and %d→%d ×%d", x.up.rs, x.up.from, x.up.to, x.up.count, x.down.from, x.down.to, x.down.count))
	}
	var parties []party
	if f.replicas {
		parties = replicasWriters(d, st, now)
	} else {
		parties = specWriters(d, st, now)
	}
	hasHPA := slices.ContainsFunc(parties, func(p party) bool { return p.hpa })
	var names, hints []string
	for _, p := range parties {
		if p.hint {
			hints = append(hints, p.name)
		} else {
			names = append(names, p.name)
		}
	}
	objs := []string{"deployment/" + d.Name}
	for _, h := range st.Autoscalers {
		objs = append(objs, "horizontalpodautoscaler/"+h.Name)
	}
	var msg string
	sev := Blocking
	if f.over {
		sev = Warning
		msg = fmt.Sprintf("%s flipped %d times within %s (every %s on average), the last %s ago: unchanged since, for more than %d flip periods: "+
			"the fight is over (it blocked the rollout while it lasted)", field, f.flips, f.span.Round(time.Second), f.period.Round(100*time.Millisecond),
			age(now, f.last), FightDecay)
	} else {
		msg = fmt.Sprintf("%s keeps changing: %s within %s, the last %s ago (generation %d, %s old; it counts as over after %s without a flip): two writers disagree",
			field, strings.Join(seen, "; "), f.span.Round(time.Second), age(now, f.last), d.Generation, age(now, d.CreationTimestamp.Time),
			f.decay().Round(time.Second))
	}
	switch {
	case f.over && len(names) > 0:
		msg += "; its writers: " + strings.Join(names, "; ")
	case len(names) == 0:
		msg += "; none is recorded on the object (a writer's managedFields entry goes when another takes all its fields): kubectl get deployment/" + d.Name +
			" --show-managed-fields -o yaml, and the audit log, name them"
	case len(names) == 1:
		msg += ": " + names[0] + ", and another that left no trace (its managedFields entry goes when the other takes all its fields)"
	default:
		msg += ": " + strings.Join(names, "; ")
	}
	if len(hints) > 0 && len(names) < 2 {
		msg += "; the other may be " + strings.Join(hints, ", or ")
	}
	var detail []string
	if applied, r := lastApplied(d); applied && r != nil && replicas(d.Spec.Replicas) != *r {
		detail = append(detail, fmt.Sprintf("kubectl's last-applied-configuration says replicas: %d; the live spec says %d", *r, replicas(d.Spec.Replicas)))
	}
	for _, w := range st.ReplicasWrites {
		detail = append(detail, fmt.Sprintf("watched: spec.replicas set to %d by %s, %s ago", w.Replicas, strings.Join(w.Owners, " and "), age(now, w.At)))
	}
	for _, w := range writers(d) {
		if w.subresource == "status" || w.at.IsZero() {
			continue
		}
		fields := "metadata"
		switch {
		case w.replicas && w.template:
			fields = "spec.replicas and spec.template"
		case w.replicas:
			fields = "spec.replicas"
		case w.template:
			fields = "spec.template"
		case w.spec:
			fields = "other spec fields"
		}
		via := ""
		if w.subresource != "" {
			via = " via /" + w.subresource
		}
		detail = append(detail, fmt.Sprintf("managedFields: %s (%s%s) owns %s, wrote %s ago", w.manager, w.operation, via, fields, age(now, w.at)))
	}
	c := Cause{Code: SpecFight, Severity: sev, Message: msg, Objects: objs, Detail: strings.Join(detail, "\n"), Fix: fightFix(d, hasHPA)}
	if f.over {
		c.Fix = "if it starts again: " + c.Fix
	}
	return []Cause{c}
}
