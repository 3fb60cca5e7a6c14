package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Client is every write both controllers make. memcluster.ControllerClient
// satisfies it; against a real cluster, a struct embedding
// kube.DeploymentClient and kube.ReplicaSetClient does.
type Client interface {
	deployment.Client
	replicaset.Client
}

// Sources are where the informers list and watch. memcluster's
// Client.ListWatcher values satisfy them; against a real cluster,
// kube.Deployments, kube.ReplicaSets and kube.Pods over a clientset do.
type Sources struct {
	Deployments informer.ListWatcher[*appsv1.Deployment]
	ReplicaSets informer.ListWatcher[*appsv1.ReplicaSet]
	Pods        informer.ListWatcher[*corev1.Pod]
}

// Config configures an Operator. Sources and Client are required.
type Config struct {
	Sources Sources
	Client  Client
	// Clock drives the queues, the informers and the reconcilers; nil
	// means the wall clock.
	Clock clock.Clock
	// Workers is the number of workers of each controller; 0 means 5, as
	// kube-controller-manager.
	Workers int
	// Events receives the events of both controllers; nil discards them.
	Events deployment.EventRecorder
}

// Operator runs the Deployment and ReplicaSet controllers in one process,
// sharing three informers, as kube-controller-manager does. A custom
// operator would add its own informers and controllers next to them.
type Operator struct {
	informers   []func(context.Context) error
	controllers []func(context.Context) error
}

// New wires an Operator. It starts nothing: call Run.
func New(cfg Config) (*Operator, error) {
	if cfg.Sources.Deployments == nil || cfg.Sources.ReplicaSets == nil || cfg.Sources.Pods == nil || cfg.Client == nil {
		return nil, errors.New("operator: Config needs the three Sources and a Client")
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	deployments := informer.New(cfg.Sources.Deployments, informer.Config[*appsv1.Deployment]{Clock: cfg.Clock})
	replicaSets := informer.New(cfg.Sources.ReplicaSets, informer.Config[*appsv1.ReplicaSet]{Clock: cfg.Clock})
	pods := informer.New(cfg.Sources.Pods, informer.Config[*corev1.Pod]{Clock: cfg.Clock})

	var events replicaset.EventRecorder
	if cfg.Events != nil {
		events = cfg.Events
	}
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: deployments, ReplicaSets: replicaSets, Pods: pods,
		Client: cfg.Client, Events: cfg.Events, Clock: cfg.Clock, Workers: cfg.Workers,
	})
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: replicaSets, Pods: pods, Client: cfg.Client, Events: events, Clock: cfg.Clock, Workers: cfg.Workers,
	})
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return &Operator{
		informers:   []func(context.Context) error{deployments.Run, replicaSets.Run, pods.Run},
		controllers: []func(context.Context) error{dc.Run, rc.Run},
	}, nil
}

// Run runs the informers and the controllers until ctx ends, then shuts
// down in order: the controllers first (each stops taking keys and waits
// for the syncs in progress), then the informers. It returns once every
// goroutine it started has returned, with the errors of the components
// that failed; a normal shutdown returns nil.
func (o *Operator) Run(ctx context.Context) error {
	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()

	var mu sync.Mutex
	var errs []error
	keep := func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	var informers, controllers sync.WaitGroup
	for _, run := range o.informers {
		informers.Go(func() { keep(run(informerCtx)) })
	}
	for _, run := range o.controllers {
		controllers.Go(func() { keep(run(ctx)) })
	}
	controllers.Wait() // returns once ctx has ended and the workers are done
	stopInformers()
	informers.Wait()
	return errors.Join(errs...)
}
