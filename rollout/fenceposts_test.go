package rollout

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	type result struct {
		Surge, Unavailable int32
		Err                string
	}
	tests := []struct {
		name               string
		surge, unavailable *intstr.IntOrString
		desired            int32
		want               result
	}{
		{"D=0 fencepost", intOrStr("25%"), intOrStr("25%"), 0, result{0, 1, ""}},
		{"D=1", intOrStr("25%"), intOrStr("25%"), 1, result{1, 0, ""}},
		{"D=2", intOrStr("25%"), intOrStr("25%"), 2, result{1, 0, ""}},
		{"D=3", intOrStr("25%"), intOrStr("25%"), 3, result{1, 0, ""}},
		{"D=4", intOrStr("25%"), intOrStr("25%"), 4, result{1, 1, ""}},
		{"D=5", intOrStr("25%"), intOrStr("25%"), 5, result{2, 1, ""}},
		{"D=7", intOrStr("25%"), intOrStr("25%"), 7, result{2, 1, ""}},
		{"D=10", intOrStr("25%"), intOrStr("25%"), 10, result{3, 2, ""}},
		{"D=13", intOrStr("25%"), intOrStr("25%"), 13, result{4, 3, ""}},
		{"D=100", intOrStr("25%"), intOrStr("25%"), 100, result{25, 25, ""}},
		{"surge 0, unavailable 1%", intOrStr("0"), intOrStr("1%"), 2, result{0, 1, ""}},
		{"surge 0, unavailable 1%, D=1000", intOrStr("0"), intOrStr("1%"), 1000, result{0, 10, ""}},
		{"ints are not clamped", intOrStr("5"), intOrStr("7"), 3, result{5, 7, ""}},
		{"both nil", nil, nil, 10, result{0, 1, ""}},
		{"nil surge", nil, intOrStr("2"), 10, result{0, 2, ""}},
		{"explicit zeros", intOrStr("0"), intOrStr("0%"), 10, result{0, 1, ""}},
		{"surge rounds up", intOrStr("1%"), intOrStr("1%"), 1, result{1, 0, ""}},
		{"malformed surge", intOrStr("abc%"), intOrStr("25%"), 10, result{0, 0, "fatal"}},
		{"malformed unavailable", intOrStr("25%"), intOrStr("x%"), 10, result{0, 0, "fatal"}},
		{"non-percent string", &intstr.IntOrString{Type: intstr.String, StrVal: "5"}, nil, 10, result{0, 0, "fatal"}},
		{"bad type", &intstr.IntOrString{Type: 7}, nil, 10, result{0, 0, "fatal"}},
		{"negative percent keeps upstream's value", intOrStr("-5%"), intOrStr("25%"), 100, result{-5, 25, "ignored"}},
		{"negative int", intOrStr("2"), intOrStr("-3"), 10, result{2, -3, "ignored"}},
		{"percent overflow wraps like upstream", intOrStr("1000000%"), intOrStr("1"), 1000000, result{1410065408, 1, "ignored"}},
		{"huge D", intOrStr("25%"), intOrStr("25%"), math.MaxInt32, result{536870912, 536870911, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := ResolveFenceposts(tc.surge, tc.unavailable, tc.desired)
			got := result{s, u, errKind(err)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ResolveFenceposts(%v, %v, %d) mismatch (-want +got):\n%s (err %v)", tc.surge, tc.unavailable, tc.desired, diff, err)
			}
		})
	}
}

func TestMaxSurgeMaxUnavailableMinAvailable(t *testing.T) {
	type result struct {
		Surge, Unavailable, MinAvailable int32
		Err                              string
	}
	recreate := recreateDeploy(5)
	noRU := deploy(4, "", "")
	noRU.Spec.Strategy.RollingUpdate = nil
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want result
	}{
		{"D=10 25%/25%", deploy(10, "25%", "25%"), result{3, 2, 8, ""}},
		{"D=0: unavailable 0", deploy(0, "25%", "25%"), result{0, 0, 0, ""}},
		{"D=0 int surge is not clamped", deploy(0, "5", "1"), result{5, 0, 0, ""}},
		{"unavailable clamped to D", deploy(3, "1", "10"), result{1, 3, 0, ""}},
		{"fencepost clamped to D", deploy(1, "0%", "0%"), result{0, 1, 0, ""}},
		{"recreate", recreate, result{0, 0, 0, ""}},
		{"nil deployment", nil, result{0, 0, 0, ""}},
		{"nil rollingUpdate reads as nil fields", noRU, result{0, 1, 3, ""}},
		{"malformed surge: upstream uses 0", deploy(10, "abc", "2"), result{0, 0, 10, "ignored"}},
		{"malformed unavailable zeroes surge too", deploy(10, "3", "x%"), result{0, 0, 10, "ignored"}},
		{"negative surge rounds to 0 but is reported", deploy(10, "-5%", "2"), result{0, 2, 8, "ignored"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err1 := MaxSurge(tc.d)
			u, err2 := MaxUnavailable(tc.d)
			m, err3 := MinAvailable(tc.d)
			got := result{s, u, m, errKind(errors.Join(err1, err2, err3))}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			for _, err := range []error{err1, err2, err3} {
				if err != nil && !errors.Is(err, ErrIgnoredByUpstream) {
					t.Errorf("error %v does not wrap ErrIgnoredByUpstream", err)
				}
			}
		})
	}
}

func TestDeadlineAndHistorySentinels(t *testing.T) {
	d := deploy(1, "1", "0")
	if !HasProgressDeadline(d) || !HasRevisionHistoryLimit(d) {
		t.Fatal("fixture should have both")
	}
	d.Spec.ProgressDeadlineSeconds = ptr[int32](math.MaxInt32)
	d.Spec.RevisionHistoryLimit = ptr[int32](math.MaxInt32)
	if HasProgressDeadline(d) || HasRevisionHistoryLimit(d) {
		t.Error("MaxInt32 must mean none")
	}
	d.Spec.ProgressDeadlineSeconds, d.Spec.RevisionHistoryLimit = nil, nil
	if HasProgressDeadline(d) || HasRevisionHistoryLimit(d) || HasProgressDeadline(nil) || HasRevisionHistoryLimit(nil) {
		t.Error("nil must mean none")
	}
}
