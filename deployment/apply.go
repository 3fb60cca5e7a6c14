package deployment

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// WritePlan makes the writes of plan p with c, in order, and records its
// events with events (nil discards them). It returns how many steps completed: the
// actions, then the status write, which counts as one more step; on
// success that is len(p.Actions), plus one if p.UpdateStatus is set.
//
// It stops at the first failure and returns it, wrapped with the action:
//
//   - Conflict (a stale resourceVersion) and other API errors: retry the
//     sync (the next snapshot decides afresh);
//   - creating a ReplicaSet in a terminating namespace: [reconcile.Terminal];
//   - creating a ReplicaSet that already exists: if it is ours, with our
//     template, WritePlan goes on without the "Scaled up" event (upstream
//     treats it as created); otherwise the AlreadyExists error is returned
//     and the next sync, seeing the ReplicaSet in its snapshot, bumps the
//     collision count;
//   - any other create failure records a ReplicaSetCreateError warning and,
//     with a progress deadline, writes Progressing=False first, as upstream.
//
// A plan that cannot be applied (a nil client, Deployment or object in an
// action) is an error before anything is written.
//
// Deleting a ReplicaSet that is already gone, and releasing one that is
// gone or invalid, count as success, as upstream. Objects that the plan
// wrote earlier are written again with the resourceVersion the API
// returned, so one plan never conflicts with itself.
func WritePlan(ctx context.Context, c Client, events EventRecorder, p Plan) (applied int, err error) {
	if err := checkPlan(c, p); err != nil {
		return 0, err
	}
	a := applier{c: c, events: events, p: p, rvs: map[types.NamespacedName]string{}}
	for i, act := range p.Actions {
		if a.skipEvent {
			a.skipEvent = false
			if e, ok := act.(Event); ok && e.Reason == rollout.EventScalingReplicaSet {
				continue
			}
		}
		if err := a.do(ctx, act); err != nil {
			return i, fmt.Errorf("deployment %s: %s: %w", keyOf(p.Deployment), act, err)
		}
	}
	n := len(p.Actions)
	if p.UpdateStatus == nil {
		return n, nil
	}
	d := p.UpdateStatus
	if rv := a.deploymentRV; rv != "" {
		cp := *d
		cp.ResourceVersion = rv
		d = &cp
	}
	if _, err := c.UpdateDeploymentStatus(ctx, d); err != nil {
		return n, fmt.Errorf("deployment %s: update status: %w", keyOf(p.Deployment), err)
	}
	return n + 1, nil
}

type applier struct {
	c            Client
	events       EventRecorder
	p            Plan
	rvs          map[types.NamespacedName]string // resourceVersions returned by this apply
	deploymentRV string
	skipEvent    bool
}

func (a *applier) do(ctx context.Context, act Action) error {
	switch act := act.(type) {
	case CreateReplicaSet:
		return a.create(ctx, act)
	case ScaleReplicaSet:
		return a.update(ctx, act.ReplicaSet)
	case UpdateReplicaSet:
		return a.update(ctx, act.ReplicaSet)
	case DeleteReplicaSet:
		if err := a.c.DeleteReplicaSet(ctx, act.Key, act.UID); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case AdoptReplicaSet:
		rs, err := a.c.PatchReplicaSet(ctx, act.Key, types.StrategicMergePatchType, act.Patch)
		if err != nil {
			return err
		}
		a.rvs[act.Key] = rs.ResourceVersion
	case ReleaseReplicaSet:
		rs, err := a.c.PatchReplicaSet(ctx, act.Key, types.StrategicMergePatchType, act.Patch)
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			return nil
		}
		if err != nil {
			return err
		}
		a.rvs[act.Key] = rs.ResourceVersion
	case UpdateDeployment:
		d := act.Deployment
		if a.deploymentRV != "" {
			d = d.DeepCopy()
			d.ResourceVersion = a.deploymentRV
		}
		out, err := a.c.UpdateDeployment(ctx, d)
		if err != nil {
			return err
		}
		a.deploymentRV = out.ResourceVersion
	case Event:
		if a.events != nil {
			a.events.Event(a.p.Deployment, act.Type, act.Reason, act.Message)
		}
	default:
		return fmt.Errorf("unknown action %T", act)
	}
	return nil
}

func (a *applier) update(ctx context.Context, rs *appsv1.ReplicaSet) error {
	key := keyOf(rs)
	if rv, ok := a.rvs[key]; ok {
		rs = rs.DeepCopy()
		rs.ResourceVersion = rv
	}
	out, err := a.c.UpdateReplicaSet(ctx, rs)
	if err != nil {
		return err
	}
	a.rvs[key] = out.ResourceVersion
	return nil
}

func (a *applier) create(ctx context.Context, act CreateReplicaSet) error {
	rs := act.ReplicaSet
	out, err := a.c.CreateReplicaSet(ctx, rs)
	switch {
	case err == nil:
		a.rvs[keyOf(out)] = out.ResourceVersion
		return nil
	case apierrors.IsAlreadyExists(err):
		existing, gerr := a.c.GetReplicaSet(ctx, keyOf(rs))
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == a.p.Deployment.UID &&
			rollout.EqualIgnoreHash(&a.p.Deployment.Spec.Template, &existing.Spec.Template) {
			a.rvs[keyOf(existing)] = existing.ResourceVersion
			a.skipEvent = true
			return nil
		}
		return err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return reconcile.Terminal(err)
	}
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
	var serr error
	if act.OnFailure != nil {
		d := act.OnFailure.DeepCopy()
		for i := range d.Status.Conditions {
			if c := &d.Status.Conditions[i]; c.Type == appsv1.DeploymentProgressing && c.Reason == rollout.ReasonFailedRSCreate {
				c.Message = msg
			}
		}
		if a.deploymentRV != "" {
			d.ResourceVersion = a.deploymentRV
		}
		_, serr = a.c.UpdateDeploymentStatus(ctx, d)
	}
	if a.events != nil {
		a.events.Event(a.p.Deployment, corev1.EventTypeWarning, rollout.ReasonFailedRSCreate, msg)
	}
	return errors.Join(err, serr)
}

// checkPlan returns an error if p cannot be applied with c: a nil client,
// or a nil Deployment or object where the plan needs one. The empty plan
// needs nothing.
func checkPlan(c Client, p Plan) error {
	if len(p.Actions) == 0 && p.UpdateStatus == nil {
		return nil
	}
	if c == nil {
		return errors.New("deployment: WritePlan: the Client is nil")
	}
	if p.Deployment == nil {
		return errors.New("deployment: WritePlan: Plan.Deployment is nil")
	}
	for i, act := range p.Actions {
		var missing bool
		switch act := act.(type) {
		case CreateReplicaSet:
			missing = act.ReplicaSet == nil
		case ScaleReplicaSet:
			missing = act.ReplicaSet == nil
		case UpdateReplicaSet:
			missing = act.ReplicaSet == nil
		case UpdateDeployment:
			missing = act.Deployment == nil
		case nil:
			missing = true
		}
		if missing {
			return fmt.Errorf("deployment: WritePlan: Plan.Actions[%d] (%T) has no object", i, act)
		}
	}
	return nil
}
