package memcluster

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crashBackOff is the kubelet's restart back-off after the n-th crash
// (n ≥ 1): 10s doubling, capped at 5 minutes.
func crashBackOff(n int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// podStatusAt is the status the simulated pod has at now, and the time of
// its next change (zero if none). It is a pure function of the pod's spec,
// its behaviour and its scheduling time.
func podStatusAt(p *corev1.Pod, st *podState, now time.Time) (corev1.PodStatus, time.Time) {
	sched := st.scheduledAt
	startAt := sched.Add(st.b.StartDelay)
	at := func(t time.Time) metav1.Time { return metav1.NewTime(t) }
	cond := func(t corev1.PodConditionType, ok bool, since time.Time) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: at(since)}
	}
	s := corev1.PodStatus{Phase: corev1.PodPending, StartTime: ptrTo(at(sched))}
	ready, readySince := false, sched
	var due time.Time
	containers := func(cs corev1.ContainerStatus) {
		for _, c := range p.Spec.Containers {
			cs := *cs.DeepCopy()
			cs.Name, cs.Image, cs.ImageID = c.Name, c.Image, ""
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				cs.ImageID = "memcluster://" + c.Image
				cs.ContainerID = fmt.Sprintf("memcluster://%s/%s", p.UID, c.Name)
			}
			s.ContainerStatuses = append(s.ContainerStatuses, cs)
		}
	}
	switch {
	case st.b.Failure == PodBadImage:
		image := ""
		if len(p.Spec.Containers) > 0 {
			image = p.Spec.Containers[0].Image
		}
		containers(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", image)}}})
	case now.Before(startAt):
		containers(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		due = startAt
	default:
		s.Phase = corev1.PodRunning
		s.PodIP = st.ip
		s.PodIPs = []corev1.PodIP{{IP: st.ip}}
		started := true
		running := &corev1.ContainerStateRunning{StartedAt: at(startAt)}
		cs := corev1.ContainerStatus{State: corev1.ContainerState{Running: running}, Started: &started}
		switch st.b.Failure {
		case PodCrashLoop:
			cs, due = crashLoopAt(startAt, st.b.CrashAfter, now)
		case PodNeverReady:
		default:
			readyAt := startAt.Add(st.b.ReadyDelay)
			if now.Before(readyAt) {
				due = readyAt
			} else {
				ready, readySince = true, readyAt
				cs.Ready = true
			}
		}
		containers(cs)
	}
	s.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true, sched),
		cond(corev1.PodInitialized, true, sched),
		cond(corev1.ContainersReady, ready, readySince),
		cond(corev1.PodReady, ready, readySince),
	}
	// The kubelet keeps the DisruptionTarget condition others set (an
	// eviction's, say).
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			s.Conditions = append(s.Conditions, c)
		}
	}
	// kubelet v1.37 (PodObservedGenerationTracking, GA) reports the
	// generation of the spec it acted on, in the status and in each of
	// its conditions.
	s.ObservedGeneration = p.Generation
	for i := range s.Conditions {
		if s.Conditions[i].Type != corev1.DisruptionTarget {
			s.Conditions[i].ObservedGeneration = p.Generation
		}
	}
	return s, due
}

// crashLoopAt is the container status of a container that starts at
// start, crashes after each run of runFor and is restarted after the
// back-off; due is its next change.
func crashLoopAt(start time.Time, runFor time.Duration, now time.Time) (corev1.ContainerStatus, time.Time) {
	started := true
	notStarted := false
	var last *corev1.ContainerStateTerminated
	restarts := int32(0)
	for t := start; ; {
		end := t.Add(runFor)
		if now.Before(end) {
			cs := corev1.ContainerStatus{
				State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t)}},
				Started:      &started,
				RestartCount: restarts,
			}
			if last != nil {
				cs.LastTerminationState.Terminated = last
			}
			return cs, end
		}
		restarts++
		last = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: metav1.NewTime(t), FinishedAt: metav1.NewTime(end)}
		restartAt := end.Add(crashBackOff(int(restarts)))
		if now.Before(restartAt) {
			return corev1.ContainerStatus{
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container", crashBackOff(int(restarts))),
				}},
				LastTerminationState: corev1.ContainerState{Terminated: last},
				Started:              &notStarted,
				RestartCount:         restarts,
			}, restartAt
		}
		t = restartAt
	}
}
