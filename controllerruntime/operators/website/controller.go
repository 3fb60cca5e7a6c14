package website

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// WebsiteReconciler keeps, for each Website, a Deployment of the same
// name with its image and replicas, whose pods are labelled with the
// Website (so the pod webhook injects its name), and writes the
// Deployment's ready pods into the Website's status.
type WebsiteReconciler struct {
	client.Client
}

// SetupWithManager registers the reconciler with mgr.
func (r *WebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Website{}).
		Owns(&appsv1.Deployment{}).
		Named("website").
		Complete(r)
}

// Reconcile writes one Website's Deployment and status.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var w Website
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		labels := map[string]string{WebsiteLabel: w.Name}
		d.Spec.Replicas = w.Spec.Replicas
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		if len(d.Spec.Template.Spec.Containers) == 0 {
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web"}}
		}
		d.Spec.Template.Spec.Containers[0].Image = w.Spec.Image
		return controllerutil.SetControllerReference(&w, d, r.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if w.Status.ReadyReplicas != d.Status.ReadyReplicas {
		w.Status.ReadyReplicas = d.Status.ReadyReplicas
		return ctrl.Result{}, r.Status().Update(ctx, &w)
	}
	return ctrl.Result{}, nil
}
