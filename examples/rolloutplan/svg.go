package main

import (
	"errors"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// series is one step line of the chart.
type series struct {
	id, name, color string
	width           float64
	dash            string
	value           func(k int, st planner.Step) int32
}

// chart geometry: the plot, then the x axis, then the legend below it, so
// that no label can run off the right edge.
const (
	chartW, plotL, plotR, plotT, plotB = 900, 60, 850, 40, 300
	legendTop, legendRow, legendCol    = 350, 20, 420
)

// writeSVG draws the rollout of d as step lines over time: the old and
// new ReplicaSets' sizes (spec.replicas) and the pods that exist
// (terminating included), then, above them, the old, new and total
// available pods, and on top the controller's bounds as thin dotted
// reference lines (at most replicas + maxSurge pods specified, at least
// replicas − maxUnavailable available); vertical markers show when the rollout completed and when
// the progress deadline was exceeded. "New" is the ReplicaSet matching
// the template at each step; every other one counts as old.
func writeSVG(w io.Writer, d *appsv1.Deployment, tl planner.Timeline) error {
	if len(tl.Steps) == 0 {
		return fmt.Errorf("empty timeline")
	}
	sum := func(st planner.Step, isNew bool, f func(planner.ReplicaSetState) int32) int32 {
		var n int32
		for _, rs := range st.ReplicaSets {
			if rs.New == isNew {
				n += f(rs)
			}
		}
		return n
	}
	spec := func(rs planner.ReplicaSetState) int32 { return rs.Spec }
	avail := func(rs planner.ReplicaSetState) int32 { return rs.Available }
	maxPods, minAvail := make([]int32, len(tl.Steps)), make([]int32, len(tl.Steps))
	for k, st := range tl.Steps {
		maxPods[k], minAvail[k] = bounds(d, st.Replicas)
	}
	lines := []series{
		{"old-spec", "old spec.replicas", "#d62728", 1.5, "", func(_ int, st planner.Step) int32 { return sum(st, false, spec) }},
		{"new-spec", "new spec.replicas", "#1f77b4", 1.5, "", func(_ int, st planner.Step) int32 { return sum(st, true, spec) }},
		{"pods", "pods existing (terminating included)", "#bbbbbb", 1.5, "", func(_ int, st planner.Step) int32 {
			_, pods, _, term := st.Totals()
			return pods + term
		}},
		{"old-available", "old available", "#d62728", 3, "7 4", func(_ int, st planner.Step) int32 { return sum(st, false, avail) }},
		{"new-available", "new available", "#1f77b4", 3, "7 4", func(_ int, st planner.Step) int32 { return sum(st, true, avail) }},
		{"total-available", "total available", "#2ca02c", 3, "", func(_ int, st planner.Step) int32 {
			_, _, a, _ := st.Totals()
			return a
		}},
		{"ref-max-pods", "max pods specified (replicas + maxSurge)", "#444444", 1.5, "2 3", func(k int, _ planner.Step) int32 { return maxPods[k] }},
		{"ref-min-available", "min available (replicas − maxUnavailable)", "#8c564b", 1.5, "2 3", func(k int, _ planner.Step) int32 { return minAvail[k] }},
	}
	last := tl.Steps[len(tl.Steps)-1].Time.Sub(tl.Start)
	end := last
	if tl.Stall != nil {
		// Nothing changes after the last step of a stalled rollout: end
		// the axis a little after it (and after the markers) rather than
		// at the planner's time limit, which would squeeze every step
		// into the left edge.
		end = last
		for _, m := range chartMarkers(tl) {
			end = max(end, m.at)
		}
		end += end / 5
		if t := timeTick(end); end%t != 0 {
			end += t - end%t // a whole number of ticks
		}
		end = min(end, tl.Stall.At.Sub(tl.Start))
	}
	end = max(end, time.Second)
	ymax := max(tl.PeakPods, tl.PeakSpec, 1)
	for k := range tl.Steps {
		ymax = max(ymax, maxPods[k])
	}
	step := tickStep(ymax)
	ymax = (ymax/step + 1) * step // headroom above the highest line
	plotW, plotH := float64(plotR-plotL), float64(plotB-plotT)
	x := func(d time.Duration) float64 { return plotL + plotW*float64(d)/float64(end) }
	y := func(v int32) float64 { return plotT + plotH*(1-float64(v)/float64(ymax)) }
	markers := chartMarkers(tl)
	rows := (len(lines) + len(markers) + 1) / 2
	height := legendTop + rows*legendRow + 10

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, height, chartW, height)
	fmt.Fprintf(&b, `<rect id="background" width="%d" height="%d" fill="white"/>`+"\n", chartW, height)
	title := fmt.Sprintf("deployment %s: ", d.Name)
	if tl.Complete {
		title += fmt.Sprintf("complete after %s, peak %d pods, min %d available", tl.Duration, tl.PeakPods, tl.MinAvailable)
	} else {
		title += "not complete"
	}
	fmt.Fprintf(&b, `<text id="title" x="%d" y="22" font-weight="bold">%s</text>`+"\n", plotL, html.EscapeString(title))
	b.WriteString(`<g id="axes">` + "\n")
	for v := int32(0); v <= ymax; v += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", plotL, plotR, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", plotL-6, y(v)+4, v)
	}
	for t, tick := time.Duration(0), timeTick(end); t <= end; t += tick {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">+%s</text>`+"\n", x(t), plotB+18, t)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", plotL, plotL, plotT, plotB)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", plotL, plotR, plotB, plotB)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">time since the start of the rollout</text>`+"\n", plotL+plotW/2, plotB+36)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">pods</text>`+"\n", plotT+plotH/2, plotT+plotH/2)
	b.WriteString("</g>\n")
	// Lines, in drawing order: later ones are on top.
	b.WriteString(`<g id="lines" fill="none">` + "\n")
	for _, s := range lines {
		var pts []string
		for k, st := range tl.Steps {
			t := x(st.Time.Sub(tl.Start))
			if k > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", t, y(s.value(k-1, tl.Steps[k-1]))))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", t, y(s.value(k, st))))
		}
		last := len(tl.Steps) - 1
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(end), y(s.value(last, tl.Steps[last]))))
		fmt.Fprintf(&b, `<polyline id="%s" stroke="%s" stroke-width="%g"%s points="%s"/>`+"\n", s.id, s.color, s.width, dashAttr(s.dash), strings.Join(pts, " "))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g id="markers">` + "\n")
	for _, m := range markers {
		mx := x(m.at)
		fmt.Fprintf(&b, `<line id="%s" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="1.5"/>`+"\n", m.id, mx, mx, plotT, plotB, m.color)
		anchor := "start"
		if mx > plotR-150 {
			anchor, mx = "end", mx-4
		} else {
			mx += 4
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s" text-anchor="%s">%s</text>`+"\n", mx, plotT+12, m.color, anchor, html.EscapeString(m.label))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g id="legend">` + "\n")
	i := 0
	for _, s := range lines {
		legendEntry(&b, i, s.id, s.color, s.width, s.dash, s.name)
		i++
	}
	for _, m := range markers {
		legendEntry(&b, i, m.id, m.color, 1.5, "", m.label)
		i++
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// tickStep is a round step (1, 2 or 5 × 10ⁿ) giving at most 6 ticks up
// to ymax.
func tickStep(ymax int32) int32 {
	for unit := int32(1); ; unit *= 10 {
		for _, m := range []int32{1, 2, 5} {
			if ymax/(m*unit) <= 5 {
				return m * unit
			}
		}
	}
}

// legendEntry draws entry i of the legend grid (2 columns) below the plot.
func legendEntry(b *strings.Builder, i int, id, color string, width float64, dash, label string) {
	lx := plotL + (i%2)*legendCol
	ly := legendTop + (i/2)*legendRow
	fmt.Fprintf(b, `<line id="legend-%s" x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="%g"%s/>`+"\n",
		id, lx, lx+28, ly, ly, color, width, dashAttr(dash))
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", lx+34, ly+4, html.EscapeString(label))
}

// marker is a vertical line at a moment of the rollout.
// timeTick is the step of the time axis: the smallest round duration
// that puts at most six ticks on [0, end].
func timeTick(end time.Duration) time.Duration {
	for _, t := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute} {
		if end/t <= 5 {
			return t
		}
	}
	t := time.Hour
	for end/t > 5 {
		t *= 2
	}
	return t
}

type marker struct {
	id, label, color string
	at               time.Duration
}

// chartMarkers are the completion, the moment the progress deadline was
// exceeded, and, for a stalled rollout, its last progress.
func chartMarkers(tl planner.Timeline) []marker {
	var out []marker
	if tl.Complete {
		out = append(out, marker{"marker-complete", fmt.Sprintf("complete +%s", tl.Duration), "#2ca02c", tl.Duration})
	}
	for _, st := range tl.Steps {
		if c := rollout.GetCondition(st.Status, appsv1.DeploymentProgressing); c != nil && c.Reason == rollout.ReasonProgressDeadlineExceeded {
			at := st.Time.Sub(tl.Start)
			out = append(out, marker{"marker-deadline", fmt.Sprintf("progress deadline exceeded +%s", at), "#9467bd", at})
			break
		}
	}
	if s := tl.Stall; s != nil {
		at := tl.Steps[s.Step].Time.Sub(tl.Start)
		out = append(out, marker{"marker-stall", fmt.Sprintf("last progress +%s", at), "#ff7f0e", at})
	}
	return out
}

// bounds returns the controller's limits for d at n replicas: the most
// pods it specifies and the fewest it keeps available.
func bounds(d *appsv1.Deployment, n int32) (maxPods, minAvailable int32) {
	dk := d.DeepCopy()
	dk.Spec.Replicas = &n
	if !rollout.IsRollingUpdate(dk) {
		return n, 0
	}
	// A malformed value gives upstream's numbers, which the controller
	// acts on (errors wrapping rollout.ErrIgnoredByUpstream).
	surge, err := rollout.MaxSurge(dk)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		surge = 0
	}
	minAvailable, err = rollout.MinAvailable(dk)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		minAvailable = 0
	}
	return n + surge, minAvailable
}
