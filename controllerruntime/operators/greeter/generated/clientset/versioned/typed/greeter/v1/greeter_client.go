// Package v1 is the typed client of greeter.ctrlkit.dev/v1.
package v1

import (
	"net/http"

	"k8s.io/client-go/rest"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned/scheme"
)

// GreeterV1Interface is the client of the group version.
type GreeterV1Interface interface {
	RESTClient() rest.Interface
	GreetersGetter
}

// GreeterV1Client talks to greeter.ctrlkit.dev/v1.
type GreeterV1Client struct {
	restClient rest.Interface
}

// Greeters returns the client of the Greeters of namespace.
func (c *GreeterV1Client) Greeters(namespace string) GreeterInterface {
	return newGreeters(c, namespace)
}

// NewForConfig returns a client for c.
func NewForConfig(c *rest.Config) (*GreeterV1Client, error) {
	cfg := *c
	setConfigDefaults(&cfg)
	h, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, h)
}

// NewForConfigAndClient returns a client for c that sends its requests
// with h.
func NewForConfigAndClient(c *rest.Config, h *http.Client) (*GreeterV1Client, error) {
	cfg := *c
	setConfigDefaults(&cfg)
	rc, err := rest.RESTClientForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	return &GreeterV1Client{rc}, nil
}

// New returns a client that sends its requests with c.
func New(c rest.Interface) *GreeterV1Client { return &GreeterV1Client{c} }

func setConfigDefaults(cfg *rest.Config) {
	gv := greeterv1.SchemeGroupVersion
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
}

// RESTClient returns the REST client the client sends its requests with.
func (c *GreeterV1Client) RESTClient() rest.Interface {
	if c == nil {
		return nil
	}
	return c.restClient
}
