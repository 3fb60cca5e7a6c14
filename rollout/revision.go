package rollout

import (
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// annotationsOf returns obj's annotations; ok is false for a nil object
// (including typed nil pointers of the kinds this package handles).
func annotationsOf(obj metav1.Object) (map[string]string, bool) {
	switch o := obj.(type) {
	case nil:
		return nil, false
	case *appsv1.ReplicaSet:
		if o == nil {
			return nil, false
		}
	case *appsv1.Deployment:
		if o == nil {
			return nil, false
		}
	}
	return obj.GetAnnotations(), true
}

// Revision parses obj's revision annotation as an int64 (upstream
// deployment/util.Revision). A missing annotation is revision 0 with no
// error; a value that does not parse is an error. A nil object is an error
// (upstream panics).
func Revision(obj metav1.Object) (int64, error) {
	ann, ok := annotationsOf(obj)
	if !ok {
		return 0, errors.New("rollout: revision of a nil object")
	}
	v, ok := ann[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// revisionErr wraps a Revision error with the ReplicaSet's name.
func revisionErr(rs *appsv1.ReplicaSet, err error) error {
	name := "<nil>"
	if rs != nil {
		name = rs.Namespace + "/" + rs.Name
	}
	return fmt.Errorf("rollout: revision of ReplicaSet %s: %w", name, err)
}

// MaxRevision is the largest revision among rss, 0 if none (upstream
// deployment/util.MaxRevision). ReplicaSets whose revision does not parse
// are skipped, as upstream, and reported in err, which wraps
// [ErrIgnoredByUpstream].
func MaxRevision(rss []*appsv1.ReplicaSet) (int64, error) {
	var highest int64
	var errs []error
	for _, rs := range rss {
		v, err := Revision(rs)
		switch {
		case err != nil:
			errs = append(errs, revisionErr(rs, err))
		case v > highest:
			highest = v
		}
	}
	return highest, joinIgnored(errs...)
}

// LastRevision is the second-largest revision among rss (upstream
// deployment/util.LastRevision), the target of a rollback to "previous". A
// revision equal to the running maximum pushes the maximum down, so a
// duplicated maximum is also the last revision. Unparseable revisions are
// handled as in [MaxRevision].
func LastRevision(rss []*appsv1.ReplicaSet) (int64, error) {
	var highest, second int64
	var errs []error
	for _, rs := range rss {
		v, err := Revision(rs)
		switch {
		case err != nil:
			errs = append(errs, revisionErr(rs, err))
		case v >= highest:
			second, highest = highest, v
		case v > second:
			second = v
		}
	}
	return second, joinIgnored(errs...)
}

// SetDeploymentRevision returns a copy of d whose revision annotation is
// revision, and whether that changed it (upstream SetDeploymentRevision).
// The copy always has a non-nil annotation map. d is not modified.
func SetDeploymentRevision(d *appsv1.Deployment, revision string) (*appsv1.Deployment, bool) {
	out := d.DeepCopy()
	if out == nil {
		out = &appsv1.Deployment{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if out.Annotations[RevisionAnnotation] == revision {
		return out, false
	}
	out.Annotations[RevisionAnnotation] = revision
	return out, true
}

// RollbackTo returns the revision requested by d's deprecated rollback
// annotation (0 means "the previous one") and whether a rollback is pending
// (upstream getRollbackTo). An empty annotation is no request; a value that
// does not parse is ignored, as upstream, and reported in err (wrapping
// [ErrIgnoredByUpstream]) — upstream never clears such a value.
func RollbackTo(d *appsv1.Deployment) (revision int64, ok bool, err error) {
	if d == nil {
		return 0, false, nil
	}
	v := d.Annotations[RollbackToAnnotation]
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, ignored(fmt.Errorf("rollout: rollback annotation: %w", err))
	}
	return n, true, nil
}
