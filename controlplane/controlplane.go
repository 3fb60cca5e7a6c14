// Package controlplane starts, in one call, what an in-memory cluster
// needs to roll Deployments out: informers of Deployments, ReplicaSets and
// pods, ctrlkit's Deployment and ReplicaSet controllers on them, and a
// simulated kubelet, all on the cluster's clock.
//
// Entry points:
//
//   - [Start] builds and starts them on a *memcluster.Cluster;
//   - [ControlPlane.Stop] stops them and returns the first error any
//     returned;
//   - then drive the simulation with memcluster.Cluster.RunUntil.
//
// Wire them by hand (see the memcluster example ExampleControllerClient)
// when you need something Config does not offer, such as your own
// informers shared with other controllers.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Config configures what [Start] starts. The zero value is
// kube-controller-manager's configuration with a kubelet of three nodes
// whose pods start in a second and are ready a second later.
type Config struct {
	// Deployment configures the Deployment controller. Its informers,
	// Client and Clock are filled in by Start (the cluster's); its
	// Reconciler must be nil.
	Deployment deployment.ControllerConfig
	// ReplicaSet configures the ReplicaSet controller; its informers,
	// Client and Clock are filled in by Start.
	ReplicaSet replicaset.ControllerConfig
	// Kubelet configures the simulated kubelet.
	Kubelet memcluster.KubeletConfig
	// NoKubelet starts no kubelet: pods stay unscheduled, or your own
	// kubelet runs them.
	NoKubelet bool
}

// ControlPlane is what [Start] started. Call Stop once done.
type ControlPlane struct {
	// Deployments, ReplicaSets and Pods are the informers the controllers
	// read; their caches may be read at any time.
	Deployments *informer.Informer[*appsv1.Deployment]
	ReplicaSets *informer.Informer[*appsv1.ReplicaSet]
	Pods        *informer.Informer[*corev1.Pod]

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// Start builds the informers, the controllers and (unless cfg.NoKubelet)
// the kubelet on c, and starts them; they run until ctx ends or Stop is
// called. A configuration the controllers refuse is an error, and nothing
// is started.
func Start(ctx context.Context, c *memcluster.Cluster, cfg Config) (*ControlPlane, error) {
	if c == nil {
		return nil, errors.New("controlplane: Start: nil cluster")
	}
	if cfg.Deployment.Reconciler != nil {
		return nil, errors.New("controlplane: Start: Config.Deployment.Reconciler must be nil (the controller's own writes to the cluster)")
	}
	clk := c.Clock()
	p := &ControlPlane{
		Deployments: informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: clk}),
		ReplicaSets: informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: clk}),
		Pods:        informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: clk}),
	}
	client := memcluster.ControllerClient{Cluster: c}
	dcfg := cfg.Deployment
	dcfg.Deployments, dcfg.ReplicaSets, dcfg.Pods, dcfg.Client, dcfg.Clock = p.Deployments, p.ReplicaSets, p.Pods, client, clk
	dc, err := deployment.NewController(dcfg)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	rcfg := cfg.ReplicaSet
	rcfg.ReplicaSets, rcfg.Pods, rcfg.Client, rcfg.Clock = p.ReplicaSets, p.Pods, client, clk
	rc, err := replicaset.NewController(rcfg)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	runs := []func(context.Context) error{p.Deployments.Run, p.ReplicaSets.Run, p.Pods.Run, dc.Run, rc.Run}
	if !cfg.NoKubelet {
		k := memcluster.NewKubelet(c, cfg.Kubelet)
		runs = append(runs, func(ctx context.Context) error { k.Run(ctx); return nil })
	}
	ctx, p.cancel = context.WithCancel(ctx)
	for _, run := range runs {
		p.wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				p.mu.Lock()
				p.errs = append(p.errs, err)
				p.mu.Unlock()
			}
		})
	}
	return p, nil
}

// Stop stops everything Start started, waits for it to return, and
// returns the errors any of it returned (nil after a normal stop).
func (p *ControlPlane) Stop() error {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}
