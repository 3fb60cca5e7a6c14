package reconcile

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Result tells the caller of a [Reconciler] when to sync the key again,
// on success. It is ignored when Reconcile returns an error (the caller
// retries with backoff, unless the error is [Terminal]).
type Result struct {
	// RequeueAfter, if positive, asks for another sync after that delay
	// (the progress deadline of a Deployment, a pod of a ReplicaSet
	// becoming available after minReadySeconds). Zero means no requeue.
	RequeueAfter time.Duration
}

// Reconciler syncs one object per call, named by its key. The Reconcilers
// of packages deployment and replicaset implement it.
type Reconciler interface {
	Reconcile(ctx context.Context, key types.NamespacedName) (Result, error)
}

// Func adapts a function to [Reconciler].
type Func func(ctx context.Context, key types.NamespacedName) (Result, error)

// Reconcile calls f(ctx, key).
func (f Func) Reconcile(ctx context.Context, key types.NamespacedName) (Result, error) {
	return f(ctx, key)
}

var _ Reconciler = Func(nil)

// ErrTerminal marks errors that retrying cannot fix; see [Terminal].
var ErrTerminal = errors.New("reconcile: terminal error")

// Terminal wraps err so that errors.Is(err, ErrTerminal) holds: a worker
// logs it and forgets the key instead of retrying (controller-runtime's
// reconcile.TerminalError; the controller-runtime adapter maps one to the
// other). errors.Unwrap gives err back. A nil err stays nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

// IsTerminal reports whether err, or any error it wraps, was made by
// [Terminal].
func IsTerminal(err error) bool { return errors.Is(err, ErrTerminal) }

type terminalError struct{ err error }

func (e terminalError) Error() string        { return "terminal error: " + e.err.Error() }
func (e terminalError) Unwrap() error        { return e.err }
func (e terminalError) Is(target error) bool { return target == ErrTerminal }
