package webapp

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// RecheckInterval is how often the operator looks at a WebApp again when
// nothing it watches has changed.
const RecheckInterval = time.Hour

// DefaultPort is the port of a WebApp whose spec gives none.
const DefaultPort = 8080

// Reconciler makes the Deployment and the Service of each WebApp, both
// named after it and controlled by it (so the garbage collector deletes
// them with it), and reports in the WebApp's status whether the
// Deployment has rolled out the current spec and is Available.
type Reconciler struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// SetupWithManager registers the reconciler with mgr: it reconciles a
// WebApp when its spec changes (GenerationChangedPredicate: its own status
// writes do not wake it) and when its Deployment or Service changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&WebApp{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Named("webapp").
		Complete(r)
}

// Reconcile brings the Deployment and Service of one WebApp in line with
// its spec and writes its status. It asks to run again after
// RecheckInterval; events of the WebApp, its Deployment and its Service
// bring it back sooner.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app WebApp
	if err := r.Client.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // deleted: the garbage collector removes what it owned
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		return r.mutateDeployment(&app, dep)
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("deployment %s: %w", req.Name, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		return r.mutateService(&app, svc)
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("service %s: %w", req.Name, err)
	}

	now := metav1.Now()
	app.Status = WebAppStatus{
		Ready:              rolledOut(dep),
		ObservedGeneration: app.Generation,
		AvailableReplicas:  dep.Status.AvailableReplicas,
		LastChecked:        &now,
	}
	if err := r.Client.Status().Update(ctx, &app); err != nil {
		return ctrl.Result{}, fmt.Errorf("status of %s: %w", req.Name, err)
	}
	return ctrl.Result{RequeueAfter: RecheckInterval}, nil
}

// Labels are the labels of a WebApp's pods, and its Deployment's and
// Service's selector.
func Labels(app *WebApp) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": app.Name}
}

// Replicas is the number of pods app asks for.
func Replicas(app *WebApp) int32 {
	if app.Spec.Replicas == nil {
		return 1
	}
	return *app.Spec.Replicas
}

// Port is the port app serves on.
func Port(app *WebApp) int32 {
	if app.Spec.Port == 0 {
		return DefaultPort
	}
	return app.Spec.Port
}

// mutateDeployment sets the fields of d that the WebApp decides, and
// leaves those the API server defaults alone, so that an unchanged WebApp
// makes no update.
func (r *Reconciler) mutateDeployment(app *WebApp, d *appsv1.Deployment) error {
	labels := Labels(app)
	replicas := Replicas(app)
	d.Spec.Replicas = &replicas
	if d.Spec.Selector == nil { // immutable once created
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	if d.Spec.Template.Labels == nil {
		d.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range labels {
		d.Spec.Template.Labels[k] = v
	}
	i := containerIndex(d.Spec.Template.Spec.Containers, "web")
	if i < 0 {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "web"})
		i = len(d.Spec.Template.Spec.Containers) - 1
	}
	c := &d.Spec.Template.Spec.Containers[i]
	c.Image = app.Spec.Image
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: Port(app), Protocol: corev1.ProtocolTCP}}
	return controllerutil.SetControllerReference(app, d, r.Scheme)
}

func (r *Reconciler) mutateService(app *WebApp, s *corev1.Service) error {
	s.Spec.Selector = Labels(app)
	port := Port(app)
	s.Spec.Ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)}}
	return controllerutil.SetControllerReference(app, s, r.Scheme)
}

func containerIndex(cs []corev1.Container, name string) int {
	for i := range cs {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
}

// rolledOut reports whether d has rolled out its current spec and is
// Available: what kubectl rollout status waits for, and the Available
// condition.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
		return false
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
