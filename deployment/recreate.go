package deployment

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// recreate is upstream rolloutRecreate; the decisions are
// rollout.Recreate's:
//
//  1. sync the new ReplicaSet if there is one (no create yet, so nothing
//     scales up before the old pods are gone);
//  2. scale every active old ReplicaSet to 0, or, while an old pod is still
//     running, wait; either way compute the status and stop;
//  3. create the new ReplicaSet at D, or scale it to D;
//  4. if the Deployment was complete when the sync started, clean up the
//     revision history; compute the status.
func (s *syncer) recreate() error {
	s.syncNewRS()
	step, err := rollout.Recreate(s.d, s.newRS(), s.olds(), s.claimedPods())
	if err != nil && !isIgnored(err) {
		return err
	}
	s.applyScales(step.Scales)
	if step.ScaledOld || step.OldPodsRunning {
		return s.syncRolloutStatus()
	}
	if step.CreateNewReplicaSet {
		// Created at D, so upstream's following scale-up is a no-op.
		if err := s.createNewRS(); err != nil {
			return err
		}
	}
	if rollout.DeploymentComplete(s.d, s.d.Status) {
		s.cleanup(s.olds())
	}
	return s.syncRolloutStatus()
}

// claimedPods is State.Pods restricted to the claimed ReplicaSets, like
// upstream's podMap (built from the claimed list).
func (s *syncer) claimedPods() map[types.UID][]*corev1.Pod {
	claimed := 0
	for _, rs := range s.rss {
		if _, ok := s.pods[rs.UID]; ok {
			claimed++
		}
	}
	if claimed == len(s.pods) {
		return s.pods
	}
	out := make(map[types.UID][]*corev1.Pod, claimed)
	for _, rs := range s.rss {
		if pods, ok := s.pods[rs.UID]; ok {
			out[rs.UID] = pods
		}
	}
	return out
}
