package defaults

import (
	"maps"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Job sets what kube-apiserver v1.37 sets on a batch/v1 Job on create and
// update: parallelism 1 (and completions 1 when neither is set);
// backoffLimit 6, or the largest int32 with a backoffLimitPerIndex;
// completionMode NonIndexed; suspend false; podReplacementPolicy Failed
// with a podFailurePolicy, else TerminatingOrFailed; manualSelector false;
// a podFailurePolicy's onPodConditions status True; the Job's labels
// copied from its template's when it has none; and the [PodSpec] defaults
// of its template.
//
// The selector and the labels kube-apiserver generates when manualSelector
// is false (batch.kubernetes.io/controller-uid, job-name, …) need the
// Job's uid: the server sets them on create, not this function.
func Job(j *batchv1.Job) {
	if j == nil {
		return
	}
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr[int32](6)
		}
	}
	if s.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = maps.Clone(s.Template.Labels)
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr(false)
	}
	jobTemplate(s)
}

// CronJob sets what kube-apiserver v1.37 sets on a batch/v1 CronJob on
// create and update: concurrencyPolicy Allow, suspend false,
// successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1, and in its job
// template a podFailurePolicy's onPodConditions status True and the
// [PodSpec] defaults of the pod template. The job template gets none of
// a [Job]'s own defaults: those are set on each Job the CronJob creates.
func CronJob(cj *batchv1.CronJob) {
	if cj == nil {
		return
	}
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr[int32](3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr[int32](1)
	}
	jobTemplate(&s.JobTemplate.Spec)
}

// jobTemplate is what a Job's spec gets wherever it is.
func jobTemplate(s *batchv1.JobSpec) {
	if p := s.PodFailurePolicy; p != nil {
		for i := range p.Rules {
			for j := range p.Rules[i].OnPodConditions {
				setEmpty(&p.Rules[i].OnPodConditions[j].Status, corev1.ConditionTrue)
			}
		}
	}
	PodSpec(&s.Template.Spec)
}
