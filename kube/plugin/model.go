package plugin

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/planner"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Model is the pod model a plan used and where it came from.
type Model struct {
	// StartDelay, ReadyAfter and ReadyJitter are planner.PodModel's.
	StartDelay  Duration `json:"startDelay"`
	ReadyAfter  Duration `json:"readyAfter"`
	ReadyJitter Duration `json:"readyJitter"`
	// NeverReady, CrashLoop and BadImage are failure fractions (0–1).
	NeverReady float64 `json:"neverReady,omitempty"`
	CrashLoop  float64 `json:"crashLoop,omitempty"`
	BadImage   float64 `json:"badImage,omitempty"`
	// Shutdown is how long a deleted pod takes to stop; zero means its
	// whole terminationGracePeriodSeconds (live pods do not show it).
	Shutdown Duration `json:"shutdown"`
	// Samples is the number of live pods measured.
	Samples int `json:"samples"`
	// Source says how the model was obtained.
	Source string `json:"source"`
}

// PodModel returns the planner's model.
func (m Model) PodModel() planner.PodModel {
	return planner.PodModel{StartDelay: time.Duration(m.StartDelay), ReadyAfter: time.Duration(m.ReadyAfter),
		ReadyJitter: time.Duration(m.ReadyJitter), Shutdown: time.Duration(m.Shutdown), NeverReady: m.NeverReady, CrashLoop: m.CrashLoop, BadImage: m.BadImage}
}

// DefaultReadyAfter is the readiness delay assumed when no live pod can be
// measured.
const DefaultReadyAfter = 10 * time.Second

// ObservedModel measures the pod model on the live pods of rss (the
// Deployment's ReplicaSets): for every Ready pod that never restarted,
// creation → start (status.startTime) and start → Ready (the Ready
// condition's lastTransitionTime). StartDelay and ReadyAfter are the
// means; ReadyJitter is the width of the uniform draw with the measured
// spread. API timestamps have a resolution of one second, so the means
// are unbiased but each sample is off by up to a second: the spread is
// corrected for that (the variance of a difference of two whole-second
// truncations is 1/6 s²). Pods that are not ready, restarted, or are
// terminating are not measured. With no pod to measure it assumes
// DefaultReadyAfter and says so.
func ObservedModel(rss []*appsv1.ReplicaSet, pods []*corev1.Pod) Model {
	uids := map[string]bool{}
	for _, rs := range rss {
		uids[string(rs.UID)] = true
	}
	var starts, readies []float64
	seconds0 := map[int64]bool{} // the creation seconds seen
	for _, p := range pods {
		ref := controllerOf(p)
		if ref == nil || !uids[string(ref.UID)] || p.DeletionTimestamp != nil || !replicaset.IsPodReady(p) || restarted(p) {
			continue
		}
		readyAt := readyTime(p)
		if readyAt.IsZero() {
			continue
		}
		created := p.CreationTimestamp.Time
		started := created
		if p.Status.StartTime != nil && !p.Status.StartTime.Time.Before(created) {
			started = p.Status.StartTime.Time
		}
		if readyAt.Before(started) {
			readyAt = started
		}
		seconds0[created.Unix()] = true
		starts = append(starts, started.Sub(created).Seconds())
		readies = append(readies, readyAt.Sub(started).Seconds())
	}
	if len(readies) == 0 {
		return Model{ReadyAfter: Duration(DefaultReadyAfter),
			Source: fmt.Sprintf("no ready pod to measure: assumed Ready %s after creation", DefaultReadyAfter)}
	}
	// The start delay is the median: API times have one-second resolution,
	// so a delay of a fraction of a second shows as 0 s for most pods and
	// 1 s for the few whose creation and start straddle a second boundary,
	// and the mean of a handful of pods would make a 0.1 s delay 0.25 s
	// (a quarter of a second more per wave of a rollout).
	start, ready := median(starts), mean(readies)
	jitter := 0.0
	if len(readies) > 1 {
		v := variance(readies, ready) - 1.0/6
		if v > 0 {
			jitter = math.Min(math.Sqrt(12*v), 2*ready)
		}
	}
	m := Model{StartDelay: seconds(start), ReadyAfter: seconds(ready - jitter/2), ReadyJitter: seconds(jitter),
		Samples: len(readies),
		Source:  fmt.Sprintf("measured on %d ready live %s: creation→start %s, start→Ready %s on average", len(readies), plural(len(readies), "pod", "pods"), seconds(start), seconds(ready))}
	if len(seconds0) == 1 {
		// Every sample has the same sub-second phase: the one-second
		// truncation does not average out.
		m.Source += "; all were created in the same second and API times have one-second resolution, so these delays are known to ±1s only"
	}
	return m
}

// withFailures adds the failure fractions seen among the pods of rs (the
// template being planned): crash-looping, image pull and readiness
// failures over its pods.
func (m Model) withFailures(rs *appsv1.ReplicaSet, pods []*corev1.Pod, events []*corev1.Event, now time.Time) Model {
	if rs == nil {
		return m
	}
	issues := podIssues([]*appsv1.ReplicaSet{rs}, pods, events, now, Thresholds{}.withDefaults())
	var n int
	for _, p := range pods {
		if ref := controllerOf(p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			n++
		}
	}
	if n == 0 {
		return m
	}
	var crash, img, never int
	for _, is := range issues {
		switch is.code {
		case CrashLoopBackOff:
			crash++
		case ImagePullBackOff, ContainerConfigError:
			img++
		case ReadinessFailing, Unschedulable:
			never++
		}
	}
	m.CrashLoop, m.BadImage, m.NeverReady = float64(crash)/float64(n), float64(img)/float64(n), float64(never)/float64(n)
	if crash+img+never > 0 {
		m.Source += fmt.Sprintf("; failures seen on the %d pods of %s: %d crash-looping, %d image/config, %d never ready",
			n, rs.Name, crash, img, never)
	}
	return m
}

func restarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return true
		}
	}
	return false
}

func readyTime(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// median returns the middle of xs (the mean of the two middle values for
// an even count); xs is not empty. It sorts a copy.
func median(xs []float64) float64 {
	ys := slices.Sorted(slices.Values(xs))
	n := len(ys)
	if n%2 == 1 {
		return ys[n/2]
	}
	return (ys[n/2-1] + ys[n/2]) / 2
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func variance(xs []float64, m float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

func seconds(s float64) Duration {
	return Duration(time.Duration(math.Round(math.Max(s, 0)*1000)) * time.Millisecond)
}

// Duration is a time.Duration that prints and marshals as "1m30s".
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
