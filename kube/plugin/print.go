package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// Format is an output format: text, json or yaml.
type Format string

// The formats of -o.
const (
	Text Format = ""
	JSON Format = "json"
	YAML Format = "yaml"
)

// ParseFormat checks the -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Text, JSON, YAML:
		return f, nil
	case "text", "wide":
		return Text, nil
	}
	return "", fmt.Errorf("unknown output format %q: use json or yaml (or leave -o out for text)", s)
}

// texter is a report that has a text form.
type texter interface{ writeText(w io.Writer) }

// Write prints a report in format f.
func Write(w io.Writer, f Format, report texter) error {
	switch f {
	case JSON:
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case YAML:
		b, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	report.writeText(w)
	return nil
}

func (r WhyReport) writeText(w io.Writer) {
	head := map[RolloutState]string{Complete: "complete", Progressing: "progressing, nothing wrong found", Stuck: "STUCK", Deleting: "BEING DELETED"}[r.State]
	if r.State == Progressing && slices.Contains(r.SlowedBy, QuotaExceeded) {
		head = "progressing, slowed by quota"
	}
	fmt.Fprintf(w, "deployment/%s in %s: %s\n", r.Deployment, r.Namespace, head)
	target := r.NewReplicaSet
	if target == "" {
		target = "not created yet"
	}
	fmt.Fprintf(w, "  revision %d (replica set %s); %d replicas: %d updated, %d ready, %d available; the controller keeps ≥ %d available and ≤ %d pods\n",
		r.Revision, target, r.Replicas, r.Updated, r.Ready, r.Available, r.MinAvailable, r.MaxPods)
	if len(r.Blockers) > 0 {
		fmt.Fprintln(w, "\nWhat the controller is waiting for (its own checks):")
		for _, b := range r.Blockers {
			fmt.Fprintf(w, "  %s: %s\n", b.Code, b.Message)
		}
	}
	if len(r.Causes) > 0 {
		fmt.Fprintln(w, "\nWhy:")
		for _, c := range r.Causes {
			mark := "!"
			if c.Severity == Warning {
				mark = "~"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Code, c.Message)
			if len(c.Objects) > 0 {
				fmt.Fprintf(w, "      %s\n", listObjects(c.Objects, 5))
			}
			for _, line := range strings.Split(c.Detail, "\n") {
				if line != "" {
					fmt.Fprintf(w, "      %s\n", line)
				}
			}
		}
	}
	if e := r.Estimate; e != nil {
		if e.Complete {
			fmt.Fprintf(w, "\nEstimate: completes in about %s (at %s), as the planner simulates the rest of the rollout from the live state; "+
				"the timeline: kubectl ctrlkit plan deploy/%s -n %s\n  pod model: %s\n", e.Remaining, e.At.Format(time.RFC3339), r.Deployment, r.Namespace, e.Model)
		} else {
			fmt.Fprintf(w, "\nEstimate: the planner does not see it complete within an hour: kubectl ctrlkit plan deploy/%s -n %s\n", r.Deployment, r.Namespace)
		}
	}
	if len(r.Unblock) > 0 {
		fmt.Fprintln(w, "\nTo unblock:")
		for _, u := range r.Unblock {
			fmt.Fprintf(w, "  - %s\n", u)
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warn)
	}
}

func listObjects(objs []string, n int) string {
	if len(objs) <= n {
		return strings.Join(objs, ", ")
	}
	return strings.Join(objs[:n], ", ") + fmt.Sprintf(" and %d more", len(objs)-n)
}

func (r PlanReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "deployment/%s in %s: plan of %s\n", r.Deployment, r.Namespace, r.Change)
	shutdown := "its grace period"
	if r.Model.Shutdown > 0 {
		shutdown = r.Model.Shutdown.String()
	}
	fmt.Fprintf(w, "pod model: start %s, Ready after %s + up to %s jitter, stop in %s; %s\n\n",
		r.Model.StartDelay, r.Model.ReadyAfter, r.Model.ReadyJitter, shutdown, r.Model.Source)
	fmt.Fprint(w, r.Table)
	fmt.Fprintln(w)
	switch {
	case r.Unobserved > 0 && len(r.Stall) == 0:
		fmt.Fprintf(w, "predicted: does NOT complete as things stand: no controller has acted on the deployment for %s; "+
			"once one does, complete after %s\n", r.Unobserved, r.Duration)
	case r.Complete:
		fmt.Fprintf(w, "predicted: complete after %s\n", r.Duration)
	default:
		fmt.Fprintf(w, "predicted: does NOT complete\n")
	}
	fmt.Fprintf(w, "  peak pods %d, terminating ones included (maxSurge caps Σ spec at %d = replicas + surge; it does not count terminating pods)\n", r.PeakPods, r.MaxPods)
	fmt.Fprintf(w, "  minimum available %d (the controller keeps ≥ %d)\n", r.MinAvailable, r.MinAvailableBound)
	for _, q := range r.Quotas {
		fmt.Fprintf(w, "  %s at the start: every pod the plan creates must fit\n", quotaText(q))
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "  %d pod %s refused by the quota during the plan: the ReplicaSet controller retries until pods that go free room, after a backoff that doubles with each failed sync: expect longer\n",
			r.Refused, plural(r.Refused, "creation", "creations"))
	}
	for _, b := range r.Stall {
		fmt.Fprintf(w, "  stalls on %s: %s\n", b.Code, b.Message)
	}
	fmt.Fprintf(w, "invariants: %d violations\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warn)
	}
}

func (r HistoryReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "deployment.apps/%s in %s\n", r.Deployment, r.Namespace)
	if len(r.Revisions) == 0 {
		fmt.Fprintln(w, "No rollout history found.")
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tREPLICASET\tCREATED\tREPLICAS\tIMAGES\tCHANGE-CAUSE")
	for _, rev := range r.Revisions {
		cause := rev.ChangeCause
		if cause == "" {
			cause = "<none>"
		}
		mark := ""
		if rev.Current {
			mark = " (current)"
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%s\t%d/%d\t%s\t%s\n", rev.Revision, mark, rev.ReplicaSet, rev.Created.Format(time.RFC3339),
			rev.Available, rev.Replicas, strings.Join(rev.Images, ","), cause)
	}
	tw.Flush()
	for _, rev := range r.Revisions[min(1, len(r.Revisions)):] {
		fmt.Fprintf(w, "\nrevision %d (%s) changed:\n", rev.Revision, rev.ReplicaSet)
		if len(rev.Changes) == 0 {
			fmt.Fprintln(w, "  nothing in the pod template (a rollback or a restart of the same template)")
		}
		for _, c := range rev.Changes {
			fmt.Fprintf(w, "  %s: %s → %s\n", c.Path, orAbsent(c.From), orAbsent(c.To))
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}
