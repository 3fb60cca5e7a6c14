package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// epoch is where virtual time starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	namespace = "default"
	name      = "web"
	// maxVirtual bounds each phase of a virtual-time run.
	maxVirtual = 6 * time.Hour
)

// simulate runs the two rollouts on a new in-memory cluster.
//
// In virtual time the clock is deterministic (clock.NewDeterministic):
// every component hands its work over through the clock, which runs it one
// piece at a time in a fixed order and moves time only when nothing is left
// at the current instant. The same flags give the same output, byte for
// byte, however busy the machine is.
func simulate(ctx context.Context, o options, out io.Writer) error {
	var clk clock.Clock = clock.NewDeterministic(epoch)
	if o.realtime {
		clk = clock.Real{}
	}
	c := memcluster.New(memcluster.Config{Clock: clk, Seed: o.seed})
	tl := newTimeline(out, clk, o)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	defer func() {
		cancel()
		wg.Wait()
	}()
	if err := startControlPlane(ctx, &wg, errc, c, clk, o, tl); err != nil {
		return err
	}

	d, err := c.Deployments(namespace).Create(ctx, newDeployment(o), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create deployment: %w", err)
	}
	if err := c.SetFaults(apiFaults(o.fail.api)); err != nil {
		return err
	}
	tl.header(d)
	if err := tl.phase(ctx, c, "create", o.fromImage); err != nil {
		return err
	}

	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, name, o.toImage)
	if err := retry(ctx, func() error {
		_, err := c.Deployments(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("update image: %w", err)
	}
	tl.startUpdate()
	perr := tl.phase(ctx, c, "update", o.toImage)
	tl.summary()
	select {
	case err := <-errc:
		return err
	default:
	}
	return perr
}

// startControlPlane starts the informers, both controllers and the kubelet
// on wg; they stop when ctx ends. A component that fails sends its error
// on errc.
func startControlPlane(ctx context.Context, wg *sync.WaitGroup, errc chan<- error, c *memcluster.Cluster, clk clock.Clock, o options, tl *timeline) error {
	deployments := informer.New(c.Deployments("").ListWatcher(), informer.Config[*appsv1.Deployment]{Clock: clk})
	replicaSets := informer.New(c.ReplicaSets("").ListWatcher(), informer.Config[*appsv1.ReplicaSet]{Clock: clk})
	pods := informer.New(c.Pods("").ListWatcher(), informer.Config[*corev1.Pod]{Clock: clk})
	client := memcluster.ControllerClient{Cluster: c}

	// The timeline counts pods and ReplicaSets at every change, through
	// handlers on the shared informers.
	if err := tl.follow(pods, replicaSets); err != nil {
		return err
	}
	dc, err := deployment.NewController(deployment.ControllerConfig{
		Deployments: deployments, ReplicaSets: replicaSets, Pods: pods,
		Client: client, Clock: clk, Workers: 2,
		Events: deployment.EventRecorderFunc(func(obj runtime.Object, eventType, reason, message string) {
			tl.event(eventType, reason, message)
		}),
	})
	if err != nil {
		return err
	}
	rc, err := replicaset.NewController(replicaset.ControllerConfig{
		ReplicaSets: replicaSets, Pods: pods, Client: client, Clock: clk, Workers: 2,
	})
	if err != nil {
		return err
	}
	kubelet := memcluster.NewKubelet(c, memcluster.KubeletConfig{Model: podModel(o.readyAfter, o.toImage, o.fail)})

	report := func(what string, run func(context.Context) error) {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", what, err)
			}
		})
	}
	report("deployment informer", deployments.Run)
	report("replicaset informer", replicaSets.Run)
	report("pod informer", pods.Run)
	report("deployment controller", dc.Run)
	report("replicaset controller", rc.Run)
	wg.Go(func() { kubelet.Run(ctx) })
	return nil
}

// newDeployment is the Deployment the run creates.
func newDeployment(o options) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	replicas, deadline := int32(o.replicas), int32(o.progressDeadline/time.Second)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas:                &replicas,
			Selector:                &metav1.LabelSelector{MatchLabels: labels},
			Strategy:                o.strategyOf(),
			ProgressDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: o.fromImage}}},
			},
		},
	}
}

// outcome reads the Deployment and tells whether its rollout of image is
// over: done, or failed with the reason.
func outcome(ctx context.Context, c *memcluster.Cluster, image string) (d *appsv1.Deployment, over bool, err error) {
	d, err = c.Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	if d.Spec.Template.Spec.Containers[0].Image != image {
		return d, false, nil
	}
	st, serr := rollout.Status(d, 0)
	if serr != nil {
		return d, true, fmt.Errorf("%w: %v", errRolloutFailed, serr)
	}
	return d, st.Done, nil
}

// retry calls f until it succeeds, for the writes of this program that
// injected faults may fail.
func retry(ctx context.Context, f func() error) error {
	var err error
	for range 20 {
		if err = f(); err == nil || !apierrors.IsInternalError(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return err
}
