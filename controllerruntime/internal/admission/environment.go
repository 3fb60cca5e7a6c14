package admission

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// environment is what the admission plugins run with: the cluster's own
// clients and informers, and the plugins' chain.
type environment struct {
	scheme      *runtime.Scheme
	builtin     *runtime.Scheme
	equivalents *equivalents
	chain       admission.Interface
}

// pluginOrder is kube-apiserver v1.37's order of the admission plugins
// this package runs (its other plugins, NamespaceLifecycle, the pod
// defaults, are memcluster's own).
var pluginOrder = []string{mutatingpolicy.PluginName, mutatingwebhook.PluginName, validatingpolicy.PluginName, validatingwebhook.PluginName}

// start builds the admission chain on the cluster's clients and starts
// its informers, until a.ctx ends; it returns once they have listed.
func (a *Admission) start() error {
	ctx := a.ctx
	cfg := loopback(a.cfg.Handler)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc := memory.NewMemCacheClient(client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	factory := informers.NewSharedInformerFactory(client, 0)

	plugins := admission.NewPlugins()
	mutatingpolicy.Register(plugins)
	mutatingwebhook.Register(plugins)
	validatingpolicy.Register(plugins)
	validatingwebhook.Register(plugins)
	inits := admission.PluginInitializers{
		initializer.New(client, dyn, trackedFactory{factory, &a.track}, allowAll, utilfeature.DefaultFeatureGate, nil, ctx.Done(), mapper),
		webhookinit.NewPluginInitializer(a.webhookClients, serviceResolver{client}),
	}
	chain, err := plugins.NewFromPlugins(pluginOrder, noConfig{}, inits, nil)
	if err != nil {
		return err
	}
	// The namespaces' lister is read at admission (namespaceSelector):
	// the admission waits until it has seen the latest write.
	nsInformer := trackedInformer{factory.Core().V1().Namespaces().Informer(), &a.track, "namespaces"}
	if _, err := nsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return err
	}
	startVersions := a.track.versions() // the lists start after these writes
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the informer of %v did not sync", typ)
		}
	}
	if !cache.WaitFor(ctx, "", a.track.synced()...) {
		return ctx.Err()
	}
	if err := a.track.started(ctx, "validatingadmissionpolicies", "mutatingadmissionpolicies"); err != nil {
		return err
	}
	// Every handler has its initial list, which holds every write made
	// before start began.
	if err := a.track.listed(ctx, startVersions); err != nil {
		return err
	}
	a.env = &environment{scheme: a.cfg.Scheme, builtin: builtinScheme(), equivalents: &equivalents{discovery: disc}, chain: chain}
	return nil
}

// webhookClients adjusts the rest.Config of every webhook client (see
// Config.NoKeepAlive).
func (a *Admission) webhookClients(next webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
	if !a.cfg.NoKeepAlive {
		return next
	}
	adjust := func(c *rest.Config, err error) (*rest.Config, error) {
		if err != nil {
			return nil, err
		}
		c = rest.CopyConfig(c)
		// A Proxy function keeps the transport out of client-go's cache.
		c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		c.NextProtos = []string{"http/1.1"}
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return closingTransport{rt} })
		return c, nil
	}
	return &webhookutil.AuthenticationInfoResolverDelegator{
		ClientConfigForFunc: func(hostPort string) (*rest.Config, error) { return adjust(next.ClientConfigFor(hostPort)) },
		ClientConfigForServiceFunc: func(name, namespace string, port int) (*rest.Config, error) {
			return adjust(next.ClientConfigForService(name, namespace, port))
		},
	}
}

// closingTransport closes each connection after its response.
type closingTransport struct{ next http.RoundTripper }

func (t closingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Close = true
	return t.next.RoundTrip(req)
}

// allowAll is the authorizer of policies' and match conditions'
// authorizer variable: the bench has no authorization, everything is
// allowed.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// noConfig gives every plugin its default configuration.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
