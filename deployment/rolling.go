package deployment

import (
	"errors"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// rolling is upstream rolloutRolling; the sizes are rollout.Rolling's:
//
//  1. create the new ReplicaSet if there is none (or sync it);
//  2. scale the new ReplicaSet toward D, or else scale old ones down
//     (unhealthy replicas first, then as availability allows); if anything
//     was resized, compute the status and stop;
//  3. if the Deployment was complete when the sync started, clean up the
//     revision history;
//  4. compute the status, with the progress-deadline requeue.
//
// With D=10 and 25%/25% (maxSurge 3, maxUnavailable 2), a template change
// on a settled ReplicaSet of 10 creates the new one at min(13−10, 10) = 3
// and, in the same pass, shrinks the old one by 13 − 8 − 3 = 2.
func (s *syncer) rolling() error {
	if err := s.syncOrCreateNewRS(); err != nil {
		return err
	}
	step, err := rollout.Rolling(s.d, s.newRS(), s.olds())
	if err != nil && !isIgnored(err) {
		return err
	}
	// An ignored error is upstream's swallowed "invalid request to scale
	// down": the scales decided before it stand, and the pass goes on.
	s.applyScales(step.Scales)
	if step.Scaled() {
		return s.syncRolloutStatus()
	}
	if rollout.DeploymentComplete(s.d, s.d.Status) {
		s.cleanup(s.olds())
	}
	return s.syncRolloutStatus()
}

// isIgnored reports whether err is one upstream only logs.
func isIgnored(err error) bool { return err != nil && errors.Is(err, rollout.ErrIgnoredByUpstream) }
