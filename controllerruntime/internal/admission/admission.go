package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Config configures an [Admission].
type Config struct {
	// Handler serves the cluster's REST API (memcluster.NewHandler): the
	// admission reads its configurations, the namespaces and the
	// policies' parameters through it, as the cluster's own client (see
	// admit.WithLoopback), and the objects of a webhook's service.
	Handler http.Handler
	// Scheme knows the Go types of the objects the cluster stores (the
	// bench's scheme): the webhooks' patches are decoded into them.
	Scheme *runtime.Scheme
	// NoKeepAlive closes the connection to a webhook after each call, and
	// keeps its client out of client-go's process-wide transport cache:
	// inside a testing/synctest bubble a connection left open would keep a
	// goroutine off durable blocking for ever, and a cached transport would
	// cross the bubble's edge.
	NoKeepAlive bool
}

// Admission is a cluster's admission: kube-apiserver's admission chain of
// MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy and ValidatingAdmissionWebhook, in that order,
// with k8s.io/apiserver's plugins, on the configurations stored in the
// cluster. It implements admit.Admitter (memcluster.Config.Admission).
//
// It starts nothing until a configuration is written (see Wrote): a
// cluster without webhooks and policies admits every write at once.
type Admission struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	track     tracker
	compilers compilers // CheckExpressions's

	startOnce sync.Once
	startErr  error
	env       *environment // set by start
}

var _ admit.Admitter = (*Admission)(nil)

// New returns the admission of a cluster; Stop ends what it started.
func New(cfg Config) (*Admission, error) {
	if cfg.Handler == nil || cfg.Scheme == nil {
		return nil, errors.New("admission: Config needs the cluster's Handler and Scheme")
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Admission{cfg: cfg, ctx: ctx, cancel: cancel, track: newTracker()}, nil
}

// Stop ends the informers and workers the admission started.
func (a *Admission) Stop() { a.cancel() }

// Wrote tells the admission about a write the cluster stored: it follows
// the configurations and namespaces, so that a write admitted after a
// configuration was stored is admitted with it. Called with the cluster's
// lock held (memcluster.Config.OnWrite): it only records.
func (a *Admission) Wrote(w memcluster.Write) { a.track.wrote(w) }

// Active reports whether a configuration of admission is stored: without
// one, writes skip admission.
func (a *Admission) Active() bool { return a.track.configured() }

// Mutate runs the mutating stage: mutating admission policies, then
// mutating webhooks (reinvoked once if a later one changed the object, as
// their reinvocationPolicy says), on req, whose Object it changes in place.
func (a *Admission) Mutate(ctx context.Context, req *admit.Request) error {
	chain, err := a.ready(ctx)
	if chain == nil || err != nil {
		return err
	}
	m, ok := chain.(admission.MutationInterface)
	if !ok || !m.Handles(admission.Operation(req.Operation)) {
		return nil
	}
	attrs, o := a.attributes(req)
	return m.Admit(withWarnings(ctx), attrs, o)
}

// Validate runs the validating stage: validating admission policies,
// then validating webhooks.
func (a *Admission) Validate(ctx context.Context, req *admit.Request) error {
	chain, err := a.ready(ctx)
	if chain == nil || err != nil {
		return err
	}
	v, ok := chain.(admission.ValidationInterface)
	if !ok || !v.Handles(admission.Operation(req.Operation)) {
		return nil
	}
	attrs, o := a.attributes(req)
	return v.Validate(withWarnings(ctx), attrs, o)
}

// ready returns the admission chain once it has seen every configuration
// written so far; nil (and no error) while no configuration exists.
func (a *Admission) ready(ctx context.Context) (admission.Interface, error) {
	if !a.track.configured() {
		return nil, nil
	}
	a.startOnce.Do(func() { a.startErr = a.start() })
	if a.startErr != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("admission: %w", a.startErr))
	}
	if err := a.track.caughtUp(ctx); err != nil {
		return nil, err
	}
	return a.env.chain, nil
}

// attributes are req as the admission plugins take it.
func (a *Admission) attributes(req *admit.Request) (admission.Attributes, admission.ObjectInterfaces) {
	u := &user.DefaultInfo{Name: req.User.Name, UID: req.User.UID, Groups: req.User.Groups, Extra: req.User.Extra}
	attrs := admission.NewAttributesRecord(req.Object, req.OldObject, req.Kind, req.Namespace, req.Name, req.Resource,
		req.Subresource, admission.Operation(req.Operation), req.Options, req.DryRun, u)
	return attrs, a.env.objects(req)
}

// withWarnings returns ctx with a recorder of the warnings admission adds
// (k8s.io/apiserver's), which go to the request's (admit.AddWarning).
func withWarnings(ctx context.Context) context.Context {
	return warning.WithWarningRecorder(ctx, recorder{ctx})
}

type recorder struct{ ctx context.Context }

func (r recorder) AddWarning(_, text string) { admit.AddWarning(r.ctx, text) }

// admissionResources are the resources whose objects configure admission.
var admissionResources = []schema.GroupResource{
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"},
}

// loopback is the rest.Config of the cluster's own client.
func loopback(h http.Handler) *rest.Config {
	return &rest.Config{Host: "http://memcluster", QPS: -1, UserAgent: "kube-apiserver-admission",
		Transport: loopbackTransport{next: memcluster.Transport{Handler: h}}}
}

// loopbackTransport marks every request as the cluster's own. It answers
// the index of OpenAPI v3 documents itself, empty: memcluster serves no
// OpenAPI, and the mutating policies' plugin asks for it every 5 seconds
// (for the types of ApplyConfiguration mutations), logging an error at
// every 404.
type loopbackTransport struct{ next http.RoundTripper }

func (t loopbackTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/openapi/v3" {
		if req.Body != nil {
			_ = req.Body.Close() // a GET's: nothing to read
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"paths":{}}`)), Request: req}, nil
	}
	return t.next.RoundTrip(req.WithContext(admit.WithLoopback(req.Context())))
}
