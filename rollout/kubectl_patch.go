package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrPausedRestart is kubectl's refusal to restart a paused Deployment.
var ErrPausedRestart = errors.New("can't restart paused deployment (run rollout resume first)")

// RestartPatch is the strategic-merge patch `kubectl rollout restart`
// sends: the pod template annotation kubectl.kubernetes.io/restartedAt set
// to now in RFC 3339 form (kubectl uses local time with its offset; pass
// now in the location you want), i.e.
//
//	{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2024-05-01T12:00:00Z"}}}}}
//
// A paused d is [ErrPausedRestart]. If the annotation already holds that
// value (a second restart within the same second) kubectl's patch would be
// empty, and this returns kubectl's error for it.
func RestartPatch(d *appsv1.Deployment, now time.Time) ([]byte, types.PatchType, error) {
	if d == nil {
		return nil, "", errors.New("rollout: nil Deployment")
	}
	if d.Spec.Paused {
		return nil, "", ErrPausedRestart
	}
	stamp := now.Format(time.RFC3339)
	if v, ok := d.Spec.Template.Annotations[RestartedAtAnnotation]; ok && v == stamp {
		return nil, "", fmt.Errorf("failed to create patch for %s: if restart has already been triggered within the past second, please wait before attempting to trigger another", d.Name)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{RestartedAtAnnotation: stamp}}}}})
	if err != nil {
		return nil, "", fmt.Errorf("rollout: restart patch: %w", err)
	}
	return patch, types.StrategicMergePatchType, nil
}

// PausePatch is the strategic-merge patch `kubectl rollout pause` sends,
// {"spec":{"paused":true}}, or kubectl's error `deployments.apps "<name>"
// is already paused`.
func PausePatch(d *appsv1.Deployment) ([]byte, types.PatchType, error) {
	if d == nil {
		return nil, "", errors.New("rollout: nil Deployment")
	}
	if d.Spec.Paused {
		return nil, "", fmt.Errorf("deployments.apps %q is already paused", d.Name)
	}
	return []byte(`{"spec":{"paused":true}}`), types.StrategicMergePatchType, nil
}

// ResumePatch is the strategic-merge patch `kubectl rollout resume` sends,
// {"spec":{"paused":null}} (paused is omitted when false, so the two-way
// diff deletes it), or kubectl's error `deployments.apps "<name>" is not
// paused`.
func ResumePatch(d *appsv1.Deployment) ([]byte, types.PatchType, error) {
	if d == nil {
		return nil, "", errors.New("rollout: nil Deployment")
	}
	if !d.Spec.Paused {
		return nil, "", fmt.Errorf("deployments.apps %q is not paused", d.Name)
	}
	return []byte(`{"spec":{"paused":null}}`), types.StrategicMergePatchType, nil
}
