package clustertest

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// startBuiltins starts the built-in controllers that Options does not
// disable. They talk to the cluster directly (no HTTP), on the real clock:
// inside the bubble, the bubble's virtual one. Their requests and their
// informers' watch deliveries go through the cluster's gate like any
// client's.
func (c *Cluster) startBuiltins() error {
	off := c.opts.Disable
	run := func(name string, f func() error) {
		c.wg.Go(func() {
			if err := f(); err != nil && c.ctx.Err() == nil {
				c.fail(fmt.Errorf("clustertest: %s: %w", name, err))
			}
		})
	}
	if off&Kubelet == 0 {
		k := memcluster.NewKubelet(c.mc, c.opts.Kubelet)
		if err := k.Err(); err != nil {
			return fmt.Errorf("clustertest: Options.Kubelet: %w", err)
		}
		c.wg.Go(func() { k.Run(withClient(c.ctx, "kubelet")) })
	}
	if off&(DeploymentController|ReplicaSetController) == DeploymentController|ReplicaSetController {
		return nil
	}
	clk := clock.Real{}
	client := memcluster.ControllerClient{Cluster: c.mc}
	rsInf := informer.New(c.mc.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: clk, SeededJitter: true})
	podInf := informer.New(c.mc.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: clk, SeededJitter: true})
	// Requests name their client (see clients.go): the informers are
	// kube-controller-manager's, the writes each controller's.
	kcm := withClient(c.ctx, "kube-controller-manager")
	runs := []func() error{func() error { return rsInf.Run(kcm) }, func() error { return podInf.Run(kcm) }}
	events := func(component string) func(runtime.Object, string, string, string) {
		return func(obj runtime.Object, eventType, reason, message string) {
			c.rec.event(component, obj, eventType, reason, message)
		}
	}
	if off&DeploymentController == 0 {
		dInf := informer.New(c.mc.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: clk, SeededJitter: true})
		dc, err := deployment.NewController(deployment.ControllerConfig{
			Deployments: dInf, ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: clk, Workers: 5,
			Events: deployment.EventRecorderFunc(events("deployment-controller")),
		})
		if err != nil {
			return fmt.Errorf("clustertest: %w", err)
		}
		runs = append(runs, func() error { return dInf.Run(kcm) }, func() error { return dc.Run(withClient(c.ctx, "deployment-controller")) })
	}
	if off&ReplicaSetController == 0 {
		rc, err := replicaset.NewController(replicaset.ControllerConfig{
			ReplicaSets: rsInf, Pods: podInf, Client: client, Clock: clk, Workers: 5,
			Events: replicaset.EventRecorderFunc(events("replicaset-controller")),
		})
		if err != nil {
			return fmt.Errorf("clustertest: %w", err)
		}
		runs = append(runs, func() error { return rc.Run(withClient(c.ctx, "replicaset-controller")) })
	}
	for i, f := range runs {
		run(fmt.Sprintf("built-in component %d", i), f)
	}
	return nil
}

// metaOf returns obj's metadata, or nil.
func metaOf(obj runtime.Object) metav1.Object {
	m, _ := obj.(metav1.Object)
	return m
}
