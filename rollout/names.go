package rollout

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Annotation and label keys the Deployment controller reads and writes
// (upstream deployment/util constants).
const (
	// RevisionAnnotation records a ReplicaSet's (and its Deployment's) rollout
	// sequence number.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation is the comma-separated list of the revisions a
	// ReplicaSet served before its current one (it grows on rollback).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas when the
	// ReplicaSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas + maxSurge when the ReplicaSet
	// was last scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// RollbackToAnnotation is the deprecated rollback request (int64 revision,
	// 0 = previous); upstream apps.DeprecatedRollbackTo.
	RollbackToAnnotation = appsv1.DeprecatedRollbackTo
	// ChangeCauseAnnotation is what `kubectl rollout history` prints.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	// RestartedAtAnnotation is the pod-template annotation written by
	// `kubectl rollout restart`.
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
	// HashLabel is the pod-template-hash label (apps.DefaultDeploymentUniqueLabelKey).
	HashLabel = appsv1.DefaultDeploymentUniqueLabelKey

	// MaxRevisionHistoryLength bounds the revision-history annotation, in
	// characters (upstream maxRevHistoryLengthInChars).
	MaxRevisionHistoryLength = 2000
)

// Condition reasons (upstream deployment/util constants).
const (
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonFailedRSCreate             = "ReplicaSetCreateError"
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// Event reasons emitted by the Deployment controller.
const (
	EventScalingReplicaSet         = "ScalingReplicaSet"
	EventRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	EventRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	EventRollbackDone              = "DeploymentRollback"
	EventSelectingAll              = "SelectingAll"
)

// skipped lists the annotations never copied between a Deployment and its
// ReplicaSets (upstream annotationsToSkip).
func skipped(key string) bool {
	switch key {
	case corev1.LastAppliedConfigAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, RollbackToAnnotation:
		return true
	}
	return false
}

// SkipCopyAnnotation reports whether key is one of the annotations the
// controller never copies from a Deployment to a ReplicaSet or back
// (upstream skipCopyAnnotation / annotationsToSkip).
func SkipCopyAnnotation(key string) bool { return skipped(key) }

// ErrIgnoredByUpstream marks an error that upstream Kubernetes logs or
// ignores while carrying on with a decision. Functions in this package
// return such errors together with the very decision upstream makes, so a
// caller that wants upstream-identical behaviour can log them and continue:
//
//	if err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream) {
//		return err // upstream fails here too
//	}
var ErrIgnoredByUpstream = errors.New("rollout: ignored by upstream")

// ignored wraps err so that errors.Is(err, ErrIgnoredByUpstream) holds.
type ignoredError struct{ err error }

func (e *ignoredError) Error() string        { return e.err.Error() }
func (e *ignoredError) Unwrap() error        { return e.err }
func (e *ignoredError) Is(target error) bool { return target == ErrIgnoredByUpstream }

func ignored(err error) error {
	if err == nil {
		return nil
	}
	var ie *ignoredError
	if errors.As(err, &ie) {
		return err
	}
	return &ignoredError{err: err}
}

// joinIgnored joins errors that are all tolerated upstream.
func joinIgnored(errs ...error) error {
	return ignored(errors.Join(errs...))
}

// fatal reports whether err is one upstream also returns (as opposed to one
// it would only log).
func fatal(err error) bool { return err != nil && !errors.Is(err, ErrIgnoredByUpstream) }

// int32Of reads an optional replica count; nil reads as 0. Upstream
// dereferences these pointers and panics on nil; the API server always
// defaults them, so only hand-built objects notice the difference.
func int32Of(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// specReplicas is rs's spec.replicas: 0 for a nil ReplicaSet, and
// [DefaultReplicas] for a nil pointer.
func specReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil {
		return 0
	}
	return ReplicasOrDefault(rs.Spec.Replicas)
}

// desired is d's spec.replicas: 0 for a nil Deployment, and
// [DefaultReplicas] for a nil pointer.
func desired(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return ReplicasOrDefault(d.Spec.Replicas)
}

// DefaultReplicas is what a nil spec.replicas of a Deployment or a
// ReplicaSet counts as, everywhere in this library: the API server's
// default, which it stores on create (upstream dereferences the pointer
// and panics on nil; the object can only come from a hand-built value).
const DefaultReplicas int32 = 1

// ReplicasOrDefault returns *p, or [DefaultReplicas] for a nil p.
func ReplicasOrDefault(p *int32) int32 {
	if p == nil {
		return DefaultReplicas
	}
	return *p
}
