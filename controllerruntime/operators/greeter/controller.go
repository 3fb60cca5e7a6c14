package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	greeterv1 "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/apis/greeter/v1"
	"github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/clientset/versioned"
	greeterinformers "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/informers/externalversions/greeter/v1"
	greeterlisters "github.com/ctrlkit/ctrlkit/controllerruntime/operators/greeter/generated/listers/greeter/v1"
)

// FieldManager is the field manager of the controller's writes.
const FieldManager = "greeter-controller"

// Controller keeps, for each Greeter, a Deployment of its image with its
// message and replicas, controlled by the Greeter, and writes the
// Deployment's available pods into the Greeter's status.
type Controller struct {
	kube     kubernetes.Interface
	greeters versioned.Interface

	deployments       appslisters.DeploymentLister
	deploymentsSynced cache.InformerSynced
	greeterLister     greeterlisters.GreeterLister
	greetersSynced    cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// NewController returns a controller that reads through the informers
// and writes with the clientsets. Start the informers, then Run.
func NewController(kube kubernetes.Interface, greeters versioned.Interface,
	deployments appsinformers.DeploymentInformer, greeterInformer greeterinformers.GreeterInformer) (*Controller, error) {
	c := &Controller{
		kube: kube, greeters: greeters,
		deployments: deployments.Lister(), deploymentsSynced: deployments.Informer().HasSynced,
		greeterLister: greeterInformer.Lister(), greetersSynced: greeterInformer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "greeters"}),
	}
	if _, err := greeterInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	// A change of a Deployment a Greeter controls reconciles the Greeter.
	if _, err := deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueOwner,
		UpdateFunc: func(old, obj any) {
			if old.(*appsv1.Deployment).ResourceVersion != obj.(*appsv1.Deployment).ResourceVersion {
				c.enqueueOwner(obj)
			}
		},
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	name, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(name)
}

// enqueueOwner enqueues the Greeter that controls obj, if any.
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("greeter: not an object: %T", obj))
		return
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "Greeter" || ref.APIVersion != greeterv1.SchemeGroupVersion.String() {
		return
	}
	g, err := c.greeterLister.Greeters(o.GetNamespace()).Get(ref.Name)
	if err != nil || g.UID != ref.UID {
		return // gone, or another Greeter of that name
	}
	c.enqueue(g)
}

// Run waits for the caches and runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.deploymentsSynced, c.greetersSynced) {
		return errors.New("greeter: caches did not sync")
	}
	logger.Info("starting workers", "count", workers)
	for range workers {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "syncing greeter", "greeter", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync brings the Deployment of one Greeter in line with its spec and
// writes its status.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	g, err := c.greeterLister.Greeters(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: the garbage collector deletes its Deployment
	}
	if err != nil {
		return err
	}
	want := deploymentFor(g)
	dep, err := c.deployments.Deployments(g.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		dep, err = c.kube.AppsV1().Deployments(g.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("creating deployment %s/%s: %w", g.Namespace, want.Name, err)
		}
	case err != nil:
		return err
	case !metav1.IsControlledBy(dep, g):
		// Not ours: say so, and leave it alone until the spec changes.
		return c.writeStatus(ctx, g, 0, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentExists",
			Message: fmt.Sprintf("deployment %s exists and is not controlled by this greeter", dep.Name)})
	case !sameSpec(dep, want):
		upd := dep.DeepCopy()
		upd.Spec.Replicas = want.Spec.Replicas
		upd.Spec.Template.Spec.Containers = want.Spec.Template.Spec.Containers
		if dep, err = c.kube.AppsV1().Deployments(g.Namespace).Update(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("updating deployment %s/%s: %w", g.Namespace, want.Name, err)
		}
	}
	replicas := *want.Spec.Replicas
	st := dep.Status
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "PodsNotAvailable",
		Message: fmt.Sprintf("%d of %d pods available", st.AvailableReplicas, replicas)}
	if st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas == replicas && st.AvailableReplicas == replicas && st.Replicas == replicas {
		ready.Status, ready.Reason = metav1.ConditionTrue, "PodsAvailable"
	}
	return c.writeStatus(ctx, g, st.AvailableReplicas, ready)
}

// writeStatus writes g's status, if it changes.
func (c *Controller) writeStatus(ctx context.Context, g *greeterv1.Greeter, available int32, ready metav1.Condition) error {
	upd := g.DeepCopy()
	ready.ObservedGeneration = g.Generation
	upd.Status.AvailableReplicas = available
	upd.Status.ObservedGeneration = g.Generation
	meta.SetStatusCondition(&upd.Status.Conditions, ready)
	if equalStatus(g.Status, upd.Status) {
		return nil
	}
	_, err := c.greeters.GreeterV1().Greeters(g.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

func equalStatus(a, b greeterv1.GreeterStatus) bool {
	return a.AvailableReplicas == b.AvailableReplicas && a.ObservedGeneration == b.ObservedGeneration &&
		slices.EqualFunc(a.Conditions, b.Conditions, func(x, y metav1.Condition) bool {
			return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
		})
}

// deploymentFor returns the Deployment g asks for.
func deploymentFor(g *greeterv1.Greeter) *appsv1.Deployment {
	replicas := int32(1)
	if g.Spec.Replicas != nil {
		replicas = *g.Spec.Replicas
	}
	labels := map[string]string{"app.kubernetes.io/name": "greeter", "app.kubernetes.io/instance": g.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(g, greeterv1.SchemeGroupVersion.WithKind("Greeter"))}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "greeter", Image: g.Spec.Image,
					Env: []corev1.EnvVar{{Name: "GREETING", Value: g.Spec.Message}}}}},
			},
		},
	}
}

// sameSpec reports whether dep has the replicas, image and greeting of
// want.
func sameSpec(dep, want *appsv1.Deployment) bool {
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != *want.Spec.Replicas {
		return false
	}
	got, w := dep.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	return len(got) == 1 && got[0].Name == w[0].Name && got[0].Image == w[0].Image && slices.Equal(got[0].Env, w[0].Env)
}
