package planner

import (
	"github.com/ctrlkit/ctrlkit/features"

	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// PodModel says how the simulated pods of the rollout behave. The zero
// value gives pods that are Ready the instant they are created and that
// take their whole termination grace period to stop.
type PodModel struct {
	// StartDelay runs from creation to running containers.
	StartDelay time.Duration
	// ReadyAfter runs from running containers to Ready; each pod adds a
	// uniform draw from [0, ReadyJitter].
	ReadyAfter, ReadyJitter time.Duration
	// NeverReady, CrashLoop and BadImage are the fractions (0–1) of new
	// pods that run but never pass readiness, crash in a loop, or fail to
	// pull their image. Each pod draws once.
	NeverReady, CrashLoop, BadImage float64
	// Shutdown is how long a deleted pod takes to stop, capped by its
	// terminationGracePeriodSeconds; 0 means it uses the whole period.
	Shutdown time.Duration
}

// validate rejects fractions outside [0, 1] and negative delays.
func (m PodModel) validate() error {
	for _, f := range []float64{m.NeverReady, m.CrashLoop, m.BadImage} {
		if f < 0 || f > 1 {
			return fmt.Errorf("planner: pod model fraction %v outside [0, 1]", f)
		}
	}
	if m.NeverReady+m.CrashLoop+m.BadImage > 1 {
		return errors.New("planner: pod model failure fractions add up to more than 1")
	}
	if m.StartDelay < 0 || m.ReadyAfter < 0 || m.ReadyJitter < 0 || m.Shutdown < 0 {
		return errors.New("planner: pod model delays must not be negative")
	}
	return nil
}

// behavior draws one pod's behaviour. It always makes the same two draws,
// so the sequence of pods, not their outcomes, decides what comes next.
func (m PodModel) behavior(rnd *rand.Rand) memcluster.PodBehavior {
	b := memcluster.PodBehavior{StartDelay: m.StartDelay, ReadyDelay: m.ReadyAfter, ShutdownDelay: m.Shutdown}
	jitter := rnd.Int64N(int64(m.ReadyJitter) + 1)
	b.ReadyDelay += time.Duration(jitter)
	switch u := rnd.Float64(); {
	case u < m.NeverReady:
		b.Failure = memcluster.PodNeverReady
	case u < m.NeverReady+m.CrashLoop:
		b.Failure = memcluster.PodCrashLoop
	case u < m.NeverReady+m.CrashLoop+m.BadImage:
		b.Failure = memcluster.PodBadImage
	}
	return b
}

// Change is a what-if applied to the Deployment At a time after the start
// of the rollout: set any of Replicas (a scale event, like an HPA's),
// Template (a new version pushed mid-rollout: a rollover) or Paused.
type Change struct {
	At       time.Duration
	Replicas *int32
	Template *corev1.PodTemplateSpec
	Paused   *bool
}

func (c Change) String() string {
	s := fmt.Sprintf("what-if at +%s:", c.At)
	if c.Replicas != nil {
		s += fmt.Sprintf(" replicas=%d", *c.Replicas)
	}
	if c.Template != nil {
		s += " new template"
		if len(c.Template.Spec.Containers) > 0 {
			s += " (image " + c.Template.Spec.Containers[0].Image + ")"
		}
	}
	if c.Paused != nil {
		s += fmt.Sprintf(" paused=%t", *c.Paused)
	}
	return s
}

// Options configures [Simulate]. The zero value is usable.
type Options struct {
	// Seed makes the pod model's draws (and generated names) reproducible:
	// the same inputs and seed give the same timeline.
	Seed uint64
	// Horizon bounds the simulated time after the start; a rollout not
	// complete by then is reported as stalled. Zero means one hour.
	Horizon time.Duration
	// Changes are applied in order of At.
	Changes []Change
	// Nodes is the number of simulated nodes; zero means 3. Pods are
	// spread round-robin; nodes have no capacity limit.
	Nodes int
	// MaxReplicas refuses plans whose spec.replicas (or a Change's) is
	// above it, with ErrTooLarge: the simulation runs every pod, and its
	// cost grows faster than linearly (about 9 s for 5,000 replicas on
	// one core). Zero means DefaultMaxReplicas; negative means no limit.
	MaxReplicas int32
	// Progress, if set, is called at every virtual instant the
	// simulation reaches, for a progress indicator on long plans.
	Progress func(Progress)
	// FeatureGates are the kube-controller-manager feature gates the
	// simulated controllers decide with; the zero value is v1.37's
	// defaults. Set them as the cluster being planned for sets them (its
	// ReplicaSets' deletion order with PodDeletionCost off, the statuses'
	// terminatingReplicas with DeploymentReplicaSetTerminatingReplicas
	// off).
	FeatureGates features.Gates
	// InFlight, for the rest of a rollout in progress, lists the pods of
	// current ReplicaSets (by ReplicaSet name) that are not available yet:
	// for each, how long after the start it becomes available. Those
	// pods come up then, healthy, instead of before the start like the
	// other current pods. A ReplicaSet gets at most spec.replicas of them;
	// negative durations count as zero.
	InFlight map[string][]time.Duration
	// Existing, for the rest of a rollout in progress, is how many pods
	// each current ReplicaSet (by name) has: it starts with that many (at
	// most spec.replicas), and its controller creates the rest after the
	// start, through LimitRanges and Quotas, as the live controller
	// retries pods a quota refused. A ReplicaSet not listed has all of
	// spec.replicas; nil lists none.
	Existing map[string]int32
	// Quotas are the namespace's ResourceQuotas ([QuotaFrom]): every pod
	// created after the start must fit in them, counted with the pods the
	// simulation holds and the Outside ones ([AdmitPod]). A refused
	// creation is a FailedCreate warning, and the ReplicaSet controller
	// tries again at the next instant something changes (a pod removed,
	// a pod ready). A real controller retries with a backoff and after
	// the quota controller has seen the room freed: on a real cluster a
	// quota slows the rollout more than planned.
	Quotas []Quota
	// LimitRanges give the pods created after the start their default
	// requests and limits ([ApplyLimitRanges]) before Quotas judge them.
	LimitRanges []corev1.LimitRange
	// Outside are the namespace's pods the simulation does not hold,
	// which count against Quotas ([PodUsage]): other workloads', the
	// Deployment's terminating and finished ones. Their timestamps are
	// real: Now is the real time the start stands for. A terminating pod
	// without finalizers is gone at its deletionTimestamp (the end of its
	// grace period); the simulation moves to that instant.
	Outside []*corev1.Pod
	Now     time.Time
}

// DefaultMaxReplicas is the default [Options.MaxReplicas].
const DefaultMaxReplicas = 5000

// Progress reports how far a [Simulate] has got.
type Progress struct {
	// At is the virtual time since the start; Horizon its limit.
	At, Horizon time.Duration
	// Updated and Available are the new ReplicaSet's pods, of Replicas.
	Updated, Available, Replicas int32
}

// Timeline is the outcome of [Simulate].
type Timeline struct {
	// Start is the virtual time at which the rollout began; step times
	// are absolute, use Sub(Start) for offsets.
	Start time.Time
	// Steps are the observed states, one per change of any ReplicaSet's
	// counts, the Deployment's revision or conditions.
	Steps []Step
	// Complete reports whether the rollout finished (every replica
	// updated and available, after the last Change); Duration is then
	// the time it took from Start.
	Complete bool
	Duration time.Duration
	// PeakPods is the most pods that existed at once, terminating ones
	// included (what the cluster must hold); PeakSpec is the largest
	// Σ spec.replicas (what maxSurge bounds).
	PeakPods, PeakSpec int32
	// MinAvailable is the fewest available pods seen at any step.
	MinAvailable int32
	// Stall is set when the rollout did not complete.
	Stall *Stall
	// Faults counts what the pod model drew for the pods created during
	// the rollout: a failure fraction applies per pod, so a small
	// fraction of few pods may hit none.
	Faults Faults
	// Refused counts the waits for room in Options.Quotas: each time a
	// ReplicaSet's pod creation is refused after its last one succeeded
	// (the refusal, retried until a creation succeeds, is one wait and
	// one FailedCreate in the timeline).
	Refused int
}

// Faults counts the pods created during a rollout and the failures the
// [PodModel] drew for them.
type Faults struct {
	Pods                            int
	NeverReady, CrashLoop, BadImage int
}

// Stall says where and why an unfinished rollout stopped moving.
type Stall struct {
	// Step indexes the last step at which any ReplicaSet's size or
	// availability changed: the rollout made no progress after it.
	Step int
	// At is when the simulation ended (the horizon, or the moment
	// nothing more could happen).
	At time.Time
	// Blockers are Explain's reasons at At.
	Blockers []Blocker
}

// Trace returns the timeline's steps as a Trace for [Check].
func (t Timeline) Trace() Trace { return Trace(t.Steps) }

// Previous builds the ReplicaSet a finished rollout of d with template
// would have left: revision 1, sized to spec.replicas, named, labelled
// and annotated by rollout.NewReplicaSet as the controller names them.
// Pass it to [Simulate] as the current state to plan an update from template
// to d's template.
func Previous(d *appsv1.Deployment, template corev1.PodTemplateSpec) (*appsv1.ReplicaSet, error) {
	if d == nil {
		return nil, errors.New("planner: nil Deployment")
	}
	prev := d.DeepCopy()
	prev.Spec.Template = *template.DeepCopy()
	prev.Status = appsv1.DeploymentStatus{}
	rs, err := rollout.NewReplicaSet(prev, nil)
	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
		return nil, fmt.Errorf("planner: previous replica set: %w", err)
	}
	return rs, nil
}
