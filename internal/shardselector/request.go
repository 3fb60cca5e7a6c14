package shardselector

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
)

// Filter is the shardSelector of one list or watch request, as a server
// with the ShardedListAndWatch gate on applies it. A nil *Filter (no
// selector, or the gate off) matches everything.
type Filter struct {
	sel sharding.Selector
}

// ForRequest reads a request's shardSelector. With the gate off (served
// false) the parameter is ignored, as kube-apiserver v1.37 ignores it by
// default: nil, nil. An empty selector is no selector. A bad one is
// kube-apiserver's answer: 500 with no reason and the message "invalid
// shard selector: …" (its registry returns the parse error unwrapped, and
// the handler answers what is not a Status as an internal error).
func ForRequest(raw string, served bool) (*Filter, error) {
	if !served || raw == "" {
		return nil, nil
	}
	sel, err := Parse(raw)
	if err != nil {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
			Message: "invalid shard selector: " + err.Error(),
		}}
	}
	return &Filter{sel: sel}, nil
}

// Matches reports whether obj is in the selector's ranges. An object the
// selector cannot read is not, as kube-apiserver's watch cache drops it.
func (f *Filter) Matches(obj runtime.Object) bool {
	if f == nil {
		return true
	}
	ok, err := f.sel.Matches(obj)
	return err == nil && ok
}

// Info is what a list answered with the filter carries in
// metadata.shardInfo: the selector in its normalized form. Nil for a nil
// filter.
func (f *Filter) Info() *metav1.ShardInfo {
	if f == nil {
		return nil
	}
	return &metav1.ShardInfo{Selector: f.sel.String()}
}
