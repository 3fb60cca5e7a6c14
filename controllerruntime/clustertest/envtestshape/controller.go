package envtestshape

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// SiteReconciler makes the Deployment of each Site, named after it and
// controlled by it, and reports in the Site's status whether every pod of
// the current spec is ready (condition Available).
type SiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// SetupWithManager registers the reconciler with mgr: it reconciles a
// Site when it or its Deployment changes.
func (r *SiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Site{}).
		Owns(&appsv1.Deployment{}).
		Named("site").
		Complete(r)
}

// Reconcile brings the Deployment of one Site in line with its spec and
// writes its status.
func (r *SiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site Site
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !site.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	replicas := int32(1)
	if site.Spec.Replicas != nil {
		replicas = *site.Spec.Replicas
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		labels := map[string]string{"app.kubernetes.io/name": "site", "app.kubernetes.io/instance": site.Name}
		dep.Spec.Replicas = &replicas
		if dep.Spec.Selector == nil {
			dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		}
		dep.Spec.Template.Labels = labels
		if len(dep.Spec.Template.Spec.Containers) != 1 {
			dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "site"}}
		}
		dep.Spec.Template.Spec.Containers[0].Image = site.Spec.Image
		return controllerutil.SetControllerReference(&site, dep, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("deployment of %s: %w", req.Name, err)
	}

	st := dep.Status
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "PodsNotReady",
		Message: fmt.Sprintf("%d of %d pods ready", st.ReadyReplicas, replicas), ObservedGeneration: site.Generation}
	if st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas == replicas && st.ReadyReplicas == replicas && st.Replicas == replicas {
		available.Status, available.Reason = metav1.ConditionTrue, "PodsReady"
	}
	site.Status.ReadyReplicas = st.ReadyReplicas
	site.Status.ObservedGeneration = site.Generation
	meta.SetStatusCondition(&site.Status.Conditions, available)
	if err := r.Status().Update(ctx, &site); err != nil {
		return ctrl.Result{}, fmt.Errorf("status of %s: %w", req.Name, err)
	}
	return ctrl.Result{}, nil
}
