// Package admit is the seam between memcluster and admission: the
// mutating and validating stages kube-apiserver runs around a write
// (webhooks and admission policies). memcluster.Config.Admission, whose
// type is [Admitter], is set by this repository's bench
// (controllerruntime/clustertest), which implements it with
// k8s.io/apiserver's admission plugins; the root module knows only this
// interface and the [Request] it passes, so it takes no dependency on
// k8s.io/apiserver.
//
// memcluster calls the stages as kube-apiserver v1.37 does, never with its
// lock held (a webhook may read the cluster):
//
//   - create: Mutate on the object as decoded and defaulted, then the
//     kind's strategy (generated name, server fields) and validation,
//     then Validate on the object about to be stored, then the store;
//   - update, patch and apply: the same, with the stored object as
//     OldObject; a write whose object changed meanwhile starts over,
//     admission included (an update that names a resourceVersion then
//     fails with 409 Conflict), as kube-apiserver's GuaranteedUpdate does;
//   - delete: Mutate and Validate with the stored object as OldObject and
//     no Object, before the deletion takes effect;
//   - subresources (status, scale, eviction, finalize) name the
//     subresource, and the Kind of what is written there (an
//     autoscaling/v1 Scale, a policy/v1 Eviction).
package admit

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Operation is kube-apiserver's name of what a write does.
type Operation string

// The operations of writes (CONNECT, the fourth of kube-apiserver's, has
// no request in memcluster).
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// User is who sent a request, as kube-apiserver's authenticator would
// name it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Request is one write as admission sees it: kube-apiserver's
// admission.Attributes, in the external version the cluster stores.
type Request struct {
	Operation Operation
	// Kind is the kind of Object and OldObject (for a subresource, what is
	// written there: autoscaling/v1 Scale for "scale").
	Kind schema.GroupVersionKind
	// Resource and Subresource are what the request names.
	Resource    schema.GroupVersionResource
	Subresource string
	// Namespace and Name of the object (Name is empty for a create with
	// generateName, whose name is chosen after mutating admission).
	Namespace, Name string
	// Object is the new object: nil for a delete. Its apiVersion and kind
	// are set. Mutate may change it in place or replace it (with an object
	// of the same Go type).
	Object runtime.Object
	// OldObject is the stored object: nil for a create.
	OldObject runtime.Object
	// Options are the request's options: *metav1.CreateOptions,
	// UpdateOptions (an update, or a patch: PatchOptions) or
	// DeleteOptions.
	Options runtime.Object
	// DryRun is true for a request that stores nothing.
	DryRun bool
	// User is who sent it.
	User User
	// Default applies the API defaults of Kind to an object, as
	// kube-apiserver's decoder does (a mutating webhook's patched object
	// is defaulted again). Nil: the kind has none.
	Default func(runtime.Object)
}

// An Admitter runs admission for a cluster. Both methods are called
// without any lock of the cluster held, from the goroutine of the request;
// they may read and write the cluster (through its API).
type Admitter interface {
	// Active reports whether there is anything to admit with (a
	// configuration exists): while it is false, writes skip admission.
	// It is called at every write: it must be quick.
	Active() bool
	// Mutate runs the mutating stage. It may change req.Object.
	Mutate(ctx context.Context, req *Request) error
	// Validate runs the validating stage. It must not change the objects.
	Validate(ctx context.Context, req *Request) error
}

type userKey struct{}

// WithUser returns ctx naming the user of the requests made with it.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user ctx names.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

type loopbackKey struct{}

// WithLoopback marks ctx as the cluster's own: a request made with it
// (its watches' deliveries included) passes neither the cluster's Gate nor
// its injected faults, as kube-apiserver's loopback client reads its own
// storage. The admission's informers read the configurations with it.
func WithLoopback(ctx context.Context) context.Context {
	return context.WithValue(ctx, loopbackKey{}, true)
}

// IsLoopback reports whether ctx was marked by [WithLoopback].
func IsLoopback(ctx context.Context) bool {
	return ctx.Value(loopbackKey{}) != nil
}

// Warnings collects the warnings admission adds to a request, which the
// REST API answers as Warning headers.
type Warnings struct {
	mu   sync.Mutex
	list []string
}

type warningsKey struct{}

// WithWarnings returns ctx with a new collector of warnings.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// AddWarning adds a warning to the request of ctx, once: a text already
// there is not repeated. Without a collector it does nothing.
func AddWarning(ctx context.Context, text string) {
	w, ok := ctx.Value(warningsKey{}).(*Warnings)
	if !ok || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.list {
		if t == text {
			return
		}
	}
	w.list = append(w.list, text)
}

// List returns the warnings added so far, in order.
func (w *Warnings) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// ExpressionChecker is what an [Admitter] may also do: compile the CEL
// expressions of an admission configuration being written (obj; old is
// the stored one on update, else nil) as kube-apiserver's validation
// does, and return their errors. memcluster calls it with its lock held.
type ExpressionChecker interface {
	CheckExpressions(obj, old runtime.Object) field.ErrorList
}
