package main

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/planner"
)

// series is one line of the chart.
type series struct {
	name, color string
	dashed      bool
	value       func(st planner.Step) int32
}

// writeSVG draws the old and new ReplicaSets' sizes (spec.replicas) and
// available pods over time as step lines, with the total pods existing
// (terminating included) in grey. "New" is the ReplicaSet matching the
// template at each step; every other one counts as old.
func writeSVG(w io.Writer, tl planner.Timeline) error {
	const width, height, left, right, top, bottom = 860, 420, 60, 180, 30, 50
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
	lines := []series{
		{"old spec", "#d62728", false, func(st planner.Step) int32 { return sum(st, false, spec) }},
		{"old available", "#d62728", true, func(st planner.Step) int32 { return sum(st, false, avail) }},
		{"new spec", "#1f77b4", false, func(st planner.Step) int32 { return sum(st, true, spec) }},
		{"new available", "#1f77b4", true, func(st planner.Step) int32 { return sum(st, true, avail) }},
		{"pods (incl. terminating)", "#999999", false, func(st planner.Step) int32 {
			_, pods, _, term := st.Totals()
			return pods + term
		}},
	}
	if len(tl.Steps) == 0 {
		return fmt.Errorf("empty timeline")
	}
	end := tl.Steps[len(tl.Steps)-1].Time.Sub(tl.Start)
	if tl.Stall != nil {
		end = tl.Stall.At.Sub(tl.Start)
	}
	end = max(end, time.Second)
	ymax := max(tl.PeakPods, tl.PeakSpec, 1)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	x := func(d time.Duration) float64 { return left + plotW*float64(d)/float64(end) }
	y := func(v int32) float64 { return top + plotH*(1-float64(v)/float64(ymax)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	title := "rollout timeline"
	if tl.Complete {
		title += fmt.Sprintf(": complete after %s, peak %d pods", tl.Duration, tl.PeakPods)
	} else {
		title += ": not complete"
	}
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Axes, grid and ticks.
	for i := 0; i <= 5; i++ {
		v := int32((int64(ymax)*int64(i) + 4) / 5)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", left, left+plotW, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-6, y(v)+4, v)
		t := end * time.Duration(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">+%s</text>`+"\n", x(t), height-bottom+18, t.Round(time.Second))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%.1f" stroke="black"/>`+"\n", left, left, top, top+plotH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, left+plotW, top+plotH, top+plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">time since start</text>`+"\n", left+plotW/2, height-10)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">pods</text>`+"\n", top+plotH/2, top+plotH/2)
	// Step lines: hold each value until the next step's time.
	for i, s := range lines {
		var pts []string
		for k, st := range tl.Steps {
			v := y(s.value(st))
			if k > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(st.Time.Sub(tl.Start)), y(s.value(tl.Steps[k-1]))))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(st.Time.Sub(tl.Start)), v))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(end), y(s.value(tl.Steps[len(tl.Steps)-1]))))
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		ly := top + 10 + 20*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
			width-right+15, width-right+45, ly, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+50, ly+4, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
