package conformance

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// Known deviations: each is documented in FINDINGS.md. A case that hits one
// is counted, not failed.
const (
	// devUpstreamPanics: upstream dereferences a nil pointer (a nil
	// rollingUpdate, a nil new ReplicaSet, a nil entry); ours returns an
	// error or treats the value as documented instead.
	devUpstreamPanics = "upstream panics, ours does not"
)

// catch runs f and reports a panic instead of propagating it.
func catch[T any](f func() T) (v T, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

// fatal reports whether ours failed for real: upstream has no
// counterpart for errors wrapping ErrIgnoredByUpstream (it logs or drops
// them and computes on), so those do not count as failures.
func fatal(err error) bool {
	return err != nil && !errors.Is(err, rollout.ErrIgnoredByUpstream)
}

// sameErr compares ours' error with upstream's: both fail or both succeed.
func sameErr(ours, upstream error) bool {
	return fatal(ours) == (upstream != nil)
}

// cmpOpts compare resource quantities by value, as apiequality.Semantic.
var cmpOpts = cmp.Options{cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })}

// diffOf returns "" if a and b are deep-equal, otherwise a cmp.Diff
// (-upstream +ours).
func diffOf(upstream, ours any) string {
	if reflect.DeepEqual(upstream, ours) {
		return ""
	}
	d := cmp.Diff(upstream, ours, cmpOpts)
	if d == "" {
		d = fmt.Sprintf("reflect.DeepEqual differs (nil vs empty?):\nupstream: %#v\nours:     %#v", upstream, ours)
	}
	return "(-upstream +ours):\n" + d
}

// notFound is the error listers return for a missing object.
func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
}

// metav1Zero is the zero timestamp.
var metav1Zero = metav1.Time{}
