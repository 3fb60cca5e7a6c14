package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// scaled resolves an int-or-percent against total exactly like upstream
// (intstr.GetScaledValueFromIntOrPercent), with a nil value read as 0. It
// also returns raw, the value before scaling (the integer, or the number in
// front of "%"), so the validation in [checkResolved] needs no second
// parse. The result is an int, as upstream's, so callers can replicate its
// truncation to int32.
//
// The common shapes (an integer, or digits followed by "%") are parsed here
// without allocating; anything else goes through upstream's function so
// that errors carry the same text.
func scaled(v *intstr.IntOrString, total int32, roundUp bool) (n, raw int, err error) {
	if v == nil {
		return 0, 0, nil
	}
	switch {
	case v.Type == intstr.Int:
		return int(v.IntVal), int(v.IntVal), nil
	case v.Type == intstr.String && strings.HasSuffix(v.StrVal, "%"):
		p, perr := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
		if perr != nil {
			break
		}
		if roundUp {
			return int(math.Ceil(float64(p) * float64(total) / 100)), p, nil
		}
		return int(math.Floor(float64(p) * float64(total) / 100)), p, nil
	}
	n, err = intstr.GetScaledValueFromIntOrPercent(v, int(total), roundUp)
	return n, n, err
}

// checkResolved reports values that API validation would have rejected but
// that upstream computes with anyway: a negative value (int or percent,
// even when it rounds to 0), a negative result (from a negative replica
// count) and a result that does not fit in an int32 (upstream truncates
// it). v has already parsed as raw and resolved to n.
func checkResolved(field string, v *intstr.IntOrString, raw, n int) error {
	if v == nil {
		return nil
	}
	if raw < 0 {
		return fmt.Errorf("rollout: %s %q is negative", field, v.String())
	}
	if n < 0 {
		return fmt.Errorf("rollout: %s %q resolves to %d, which is negative", field, v.String(), n)
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("rollout: %s %q resolves to %d, which overflows int32 (upstream truncates it to %d)", field, v.String(), n, int32(n))
	}
	return nil
}

// ResolveFenceposts resolves a rolling update's maxSurge and
// maxUnavailable against desired replicas, in one step (upstream
// deployment/util.ResolveFenceposts):
//
//   - nil counts as 0;
//   - surge is rounded up, unavailable down;
//   - if both resolve to 0, unavailable becomes 1, so a rollout can always
//     make progress.
//
// D=10 with 25%/25% gives (3, 2); D=0 gives (0, 1).
//
// A value that does not parse ("abc%", "5", a bad Type) returns (0, 0,
// err), as upstream. A value that parses but that API validation rejects
// (negative, e.g. "-5%", or beyond int32) returns upstream's numbers
// (truncated to int32 the same way) together with an error that wraps
// [ErrIgnoredByUpstream]. It never allocates on valid input.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	s, rawS, err := scaled(maxSurge, desired, true)
	if err != nil {
		return 0, 0, fmt.Errorf("rollout: maxSurge: %w", err)
	}
	u, rawU, err := scaled(maxUnavailable, desired, false)
	if err != nil {
		return 0, 0, fmt.Errorf("rollout: maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	errS := checkResolved("maxSurge", maxSurge, rawS, s)
	errU := checkResolved("maxUnavailable", maxUnavailable, rawU, u)
	if errS != nil || errU != nil {
		err = joinIgnored(errS, errU)
	}
	return int32(s), int32(u), err
}

// IsRollingUpdate reports whether d uses the RollingUpdate strategy
// (upstream IsRollingUpdate). A nil d is not.
func IsRollingUpdate(d *appsv1.Deployment) bool {
	return d != nil && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// rollingParams returns maxSurge and maxUnavailable; a nil RollingUpdate
// (which the API server never lets through) reads as both nil, where
// upstream would panic.
func rollingParams(d *appsv1.Deployment) (maxSurge, maxUnavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// MaxSurge is how many pods a rolling Deployment may run above
// spec.replicas (upstream deployment/util.MaxSurge): 0 unless the strategy
// is RollingUpdate, else the resolved surge. It is not clamped: an integer
// maxSurge of 5 with 0 replicas gives 5.
//
// Upstream silently uses 0 when maxSurge or maxUnavailable is malformed;
// MaxSurge returns the same number and reports the problem in err, which
// always wraps [ErrIgnoredByUpstream].
func MaxSurge(d *appsv1.Deployment) (int32, error) {
	if !IsRollingUpdate(d) {
		return 0, nil
	}
	ms, mu := rollingParams(d)
	surge, _, err := ResolveFenceposts(ms, mu, desired(d))
	return surge, ignored(err)
}

// MaxUnavailable is how many of spec.replicas a rolling Deployment may be
// missing (upstream deployment/util.MaxUnavailable): 0 unless the strategy
// is RollingUpdate with replicas > 0; otherwise the resolved value clamped
// to spec.replicas. Errors are reported as in [MaxSurge].
func MaxUnavailable(d *appsv1.Deployment) (int32, error) {
	if !IsRollingUpdate(d) || desired(d) == 0 {
		return 0, nil
	}
	ms, mu := rollingParams(d)
	_, unavailable, err := ResolveFenceposts(ms, mu, desired(d))
	if unavailable > desired(d) {
		unavailable = desired(d)
	}
	return unavailable, ignored(err)
}

// MinAvailable is spec.replicas − MaxUnavailable for a rolling Deployment
// and 0 otherwise (upstream deployment/util.MinAvailable). Errors are
// reported as in [MaxSurge].
func MinAvailable(d *appsv1.Deployment) (int32, error) {
	if !IsRollingUpdate(d) {
		return 0, nil
	}
	u, err := MaxUnavailable(d)
	return desired(d) - u, err
}

// HasProgressDeadline reports whether d sets progressDeadlineSeconds to
// something other than MaxInt32, the "no deadline" sentinel (upstream
// HasProgressDeadline).
func HasProgressDeadline(d *appsv1.Deployment) bool {
	return d != nil && d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// HasRevisionHistoryLimit reports whether d limits its old ReplicaSets:
// revisionHistoryLimit is set and is not MaxInt32, the "keep everything"
// sentinel (upstream HasRevisionHistoryLimit).
func HasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d != nil && d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}
