// Package versioned is the typed clientset of the Greeter API group.
package versioned

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned/typed/greeter/v1"
)

// Interface is what a Clientset offers: a client per group version.
type Interface interface {
	Discovery() discovery.DiscoveryInterface
	GreeterV1() greeterv1.GreeterV1Interface
}

// Clientset has a client for each group version of the API group.
type Clientset struct {
	*discovery.DiscoveryClient
	greeterV1 *greeterv1.GreeterV1Client
}

// GreeterV1 returns the client of greeter.ctrlkit.dev/v1.
func (c *Clientset) GreeterV1() greeterv1.GreeterV1Interface { return c.greeterV1 }

// Discovery returns the discovery client, or nil.
func (c *Clientset) Discovery() discovery.DiscoveryInterface {
	if c == nil {
		return nil
	}
	return c.DiscoveryClient
}

// NewForConfig returns a Clientset for c, sharing one HTTP client
// among its group clients.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	h, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, h)
}

// NewForConfigAndClient returns a Clientset for c that sends its
// requests with h.
func NewForConfigAndClient(c *rest.Config, h *http.Client) (*Clientset, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var cs Clientset
	var err error
	if cs.greeterV1, err = greeterv1.NewForConfigAndClient(&cfg, h); err != nil {
		return nil, err
	}
	if cs.DiscoveryClient, err = discovery.NewDiscoveryClientForConfigAndClient(&cfg, h); err != nil {
		return nil, err
	}
	return &cs, nil
}

// NewForConfigOrDie is NewForConfig, panicking on an error.
func NewForConfigOrDie(c *rest.Config) *Clientset {
	cs, err := NewForConfig(c)
	if err != nil {
		panic(err)
	}
	return cs
}
