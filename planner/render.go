package planner

import (
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Columns returns the names of every ReplicaSet of the timeline, in order
// of first appearance (revision order within a step): the column order of
// [Timeline.WriteTable] and of charts.
func (t Timeline) Columns() []string {
	var names []string
	seen := map[string]bool{}
	for _, st := range t.Steps {
		for _, rs := range st.ReplicaSets {
			if !seen[rs.Name] {
				seen[rs.Name] = true
				names = append(names, rs.Name)
			}
		}
	}
	return names
}

// String renders the timeline as WriteTable does.
func (t Timeline) String() string {
	var b strings.Builder
	t.WriteTable(&b)
	return b.String()
}

// WriteTable writes the timeline as a fixed-width table: one row per step
// with each ReplicaSet's spec.replicas and its pods, ready, available and
// terminating counts (a dot when it does not exist; a star marks the new
// one), the pods that exist (terminating included), the available ones
// and the Deployment's
// Progressing reason and Available status, the events under the row,
// then a summary. It is meant for people and golden files.
func (t Timeline) WriteTable(w io.Writer) {
	cols := t.Columns()
	first := map[string]int64{}
	for _, st := range t.Steps {
		for _, rs := range st.ReplicaSets {
			if _, ok := first[rs.Name]; !ok {
				first[rs.Name] = rs.Revision
			}
		}
	}
	for i, name := range cols {
		fmt.Fprintf(w, "rs%d = %s (revision %d)\n", i+1, name, first[name])
	}
	fmt.Fprintf(w, "%4s %9s", "step", "time")
	for i := range cols {
		fmt.Fprintf(w, "  %-23s", fmt.Sprintf("rs%d spc pod rdy avl trm", i+1))
	}
	fmt.Fprintf(w, "  %4s %5s  %s\n", "pods", "avail", "progressing")
	for i, st := range t.Steps {
		fmt.Fprintf(w, "%4d %9s", i, offset(st.Time.Sub(t.Start)))
		for _, name := range cols {
			rs, ok := st.ReplicaSet(name)
			if !ok {
				fmt.Fprintf(w, "  %-23s", "   .")
				continue
			}
			mark := " "
			if rs.New {
				mark = "*"
			}
			fmt.Fprintf(w, "  %s%3d %3d %3d %3d %3d   ", mark, rs.Spec, rs.Replicas, rs.Ready, rs.Available, rs.Terminating)
		}
		_, pods, avail, term := st.Totals()
		fmt.Fprintf(w, "  %4d %5d  %s\n", pods+term, avail, conditions(st.Status))
		for _, e := range st.Events {
			fmt.Fprintf(w, "%14s %s\n", ">", e)
		}
	}
	t.writeSummary(w)
}

func (t Timeline) writeSummary(w io.Writer) {
	if t.Complete {
		fmt.Fprintf(w, "complete after %s; ", offset(t.Duration)[1:])
	} else {
		fmt.Fprintf(w, "not complete; ")
	}
	fmt.Fprintf(w, "peak %d pods (Σ spec %d); min available %d\n", t.PeakPods, t.PeakSpec, t.MinAvailable)
	if s := t.Stall; s != nil {
		fmt.Fprintf(w, "stalled: no progress after step %d; at %s:\n", s.Step, offset(s.At.Sub(t.Start)))
		for _, b := range s.Blockers {
			fmt.Fprintf(w, "  - %s: %s\n", b.Code, b.Message)
		}
	}
}

// conditions summarises Progressing and Available, e.g.
// "ReplicaSetUpdated, available=False".
func conditions(st appsv1.DeploymentStatus) string {
	p, a := "-", "-"
	if c := rollout.GetCondition(st, appsv1.DeploymentProgressing); c != nil {
		p = c.Reason
		if c.Status != "True" {
			p = fmt.Sprintf("%s(%s)", c.Reason, c.Status)
		}
	}
	if c := rollout.GetCondition(st, appsv1.DeploymentAvailable); c != nil {
		a = string(c.Status)
	}
	return fmt.Sprintf("%s, available=%s", p, a)
}

// offset renders a duration since the start as "+1m10s", to the
// millisecond.
func offset(d time.Duration) string {
	return "+" + d.Round(time.Millisecond).String()
}
