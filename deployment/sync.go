package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Sync decides what one sync of a Deployment must do (upstream
// syncDeployment). It is pure: it reads state, never modifies it, does no
// I/O and takes the time as now.
//
// Upstream writes as it decides and later steps read what earlier writes
// returned; Sync simulates that sequence in memory, so its decisions
// (sizes, names, annotations, conditions, events, their order) are
// upstream's. Where upstream writes the Deployment status several times in
// one sync, sometimes with a stale resourceVersion, the plan writes it
// once, last, computed from the ReplicaSets as they are after the plan's
// own writes: the state upstream reaches after its follow-up sync.
//
// The branches, in upstream's order:
//
//   - a non-nil empty selector: a SelectingAll warning, and a status
//     carrying only the observed generation;
//   - claim ReplicaSets (see [State]);
//   - being deleted: sync the new ReplicaSet's annotations, then the status;
//   - Progressing=Unknown DeploymentPaused/DeploymentResumed;
//   - paused: proportional scaling and history cleanup;
//   - a rollback annotation: roll back;
//   - a scaling event (an active ReplicaSet's desired-replicas annotation
//     differs from spec.replicas): proportional scaling. Deviation (an
//     upstream livelock fixed): when the Deployment is not RollingUpdate,
//     several ReplicaSets are active and the new one is not saturated,
//     upstream's scale() writes nothing, so the annotations stay stale and
//     every later sync is the same scaling event, forever (a Deployment
//     paused mid-rollout, switched to Recreate, resized and resumed gets
//     there). Sync goes on to the rollout instead: Recreate scales the old
//     ReplicaSets down, rewriting their annotations, and what is left is a
//     scaling event upstream resolves;
//   - Recreate or RollingUpdate rollout steps, with history cleanup once
//     complete and the progress-deadline requeue.
//
// On error the Plan is empty: nothing is to be applied. Errors come from
// invalid objects the API server would have rejected (a bad selector, a
// nil or malformed maxSurge, an unknown strategy).
func Sync(state State, now time.Time) (Plan, error) {
	s, err := newSyncer(state, now)
	if err != nil {
		return Plan{}, err
	}
	if err := s.run(); err != nil && err != errStop {
		return Plan{}, err
	}
	p := s.plan()
	if state.DeferStatus && onlyScales(p) {
		p.UpdateStatus = nil
	}
	return p, nil
}

func (s *syncer) run() error {
	d := s.d
	if isSelectingAll(d.Spec.Selector) {
		s.event(corev1.EventTypeWarning, rollout.EventSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			st := d.Status
			st.ObservedGeneration = d.Generation
			s.setStatus(st)
		}
		return nil
	}
	if err := s.claim(); err != nil {
		return err
	}
	s.findNew()
	if d.DeletionTimestamp != nil {
		s.syncNewRS()
		s.syncDeploymentStatus()
		return nil
	}
	if c, ok := rollout.PauseCondition(s.d, s.now.Time); ok { // upstream checkPausedConditions
		s.setStatus(rollout.SetCondition(s.d.Status, c))
	}
	if d.Spec.Paused {
		return s.sync()
	}
	if rev, ok, _ := rollout.RollbackTo(d); ok { // an unparseable annotation is ignored, as upstream
		return s.rollback(rev)
	}
	s.syncNewRS()
	// A scaling event upstream's scale() cannot resolve goes to the
	// rollout (see stuckScalingEvent).
	if scaling, _ := rollout.IsScalingEvent(s.d, s.newRS(), s.olds()); scaling && !s.stuckScalingEvent() { // invalid annotations are skipped, as upstream
		return s.sync()
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return s.recreate()
	case appsv1.RollingUpdateDeploymentStrategyType:
		return s.rolling()
	}
	if d.Spec.Strategy.Type == "" {
		return fmt.Errorf("deployment %s/%s: unexpected deployment strategy type: (empty; the API server's default, RollingUpdate, is set by defaults.Deployment)", d.Namespace, d.Name)
	}
	return fmt.Errorf("deployment %s/%s: unexpected deployment strategy type: %s", d.Namespace, d.Name, d.Spec.Strategy.Type)
}

// sync is upstream sync(), for paused Deployments and scaling events.
func (s *syncer) sync() error {
	s.syncNewRS()
	if err := s.scale(); err != nil {
		return err
	}
	if _, pending, _ := rollout.RollbackTo(s.d); s.d.Spec.Paused && !pending {
		s.cleanup(s.olds())
	}
	s.syncDeploymentStatus()
	return nil
}

// stuckScalingEvent reports whether a scaling event is one upstream's
// scale() cannot resolve: the Deployment is not RollingUpdate, more than
// one ReplicaSet is active and the new one is not saturated. scale() then
// writes nothing (only RollingUpdate scales proportionally), so the
// desired-replicas annotations stay stale, and upstream takes the same
// scaling-event branch on every sync and never reaches the rollout: a
// livelock. It happens when a Deployment paused mid-rollout is switched to
// Recreate and resized before it is resumed.
//
// Deviation (defect fixed): run skips the scaling-event branch in exactly
// this case and goes on to the strategy's rollout. Recreate scales the old
// ReplicaSets down, and those scales rewrite their annotations; after that
// at most one ReplicaSet is active, and any scaling event left is one
// upstream's scale() resolves (it sizes that ReplicaSet to D and rewrites
// its annotations, as upstream does), so the rollout completes. Every
// other scaling event takes upstream's branch.
func (s *syncer) stuckScalingEvent() bool {
	if rollout.IsRollingUpdate(s.d) {
		return false
	}
	return len(rollout.FilterActive(s.all())) > 1 && !rollout.IsSaturated(s.d, s.newRS())
}
