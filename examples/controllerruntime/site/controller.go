// Package site is an operator with a classic stale-read mistake, and its
// fix, for clustertest.Explore to find: a Site (site.example.com/v1) asks
// for an image and a replica count; the [Reconciler] keeps a Deployment of
// the same name in line with it and reports in status.ready whether the
// Site's image has rolled out.
//
// The mistake (kept behind an unexported switch, for the tests): once the
// operator has pushed a spec to the Deployment it records that in
// status.observedGeneration, and from then on judges readiness from the
// Deployment in its cache, trusting that the cache holds the Deployment it
// wrote. A cache lags its own client's writes: a reconcile that runs
// before the Deployment's update has come back through the watch reads the
// old Deployment, rolled out and Available at its own generation, and
// reports the new image ready while not one of its pods exists. The order
// that shows it (the Site's status event delivered before the
// Deployment's) is rare on a real cluster and never in the bench's
// canonical order; Explore finds it in a few seeds (see site_test.go).
//
// The fix: judge readiness only from a Deployment that shows the spec the
// Site asks for (its image and replicas), and has observed its own
// generation.
package site

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Reconciler keeps each Site's Deployment in line with its spec.
type Reconciler struct {
	Client client.Client

	// trustCache is the mistake: readiness judged from the cached
	// Deployment without checking that it shows the Site's spec.
	trustCache bool
}

// SetupWithManager registers the reconciler with mgr: it reconciles a Site
// when it changes (its status too) and when its Deployment changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&Site{}).Owns(&appsv1.Deployment{}).Named("site").Complete(r)
}

// Reconcile creates or updates the Site's Deployment and writes its
// status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site Site
	if err := r.Client.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var dep appsv1.Deployment
	err := r.Client.Get(ctx, req.NamespacedName, &dep) // from the Manager's cache
	switch {
	case apierrors.IsNotFound(err):
		dep = appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name}}
		desired(&site, &dep)
		if err := controllerutil.SetControllerReference(&site, &dep, r.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, &dep); err != nil {
			// AlreadyExists: the cache has not seen our own create yet;
			// its event brings us back.
			return ctrl.Result{}, client.IgnoreAlreadyExists(err)
		}
		return ctrl.Result{}, r.setStatus(ctx, &site, false)
	case err != nil:
		return ctrl.Result{}, err
	}
	if site.Status.ObservedGeneration != site.Generation { // a new spec: push it
		if shows(&site, &dep) {
			return ctrl.Result{}, r.setStatus(ctx, &site, rolledOut(&dep))
		}
		desired(&site, &dep)
		if err := r.Client.Update(ctx, &dep); err != nil {
			return ctrl.Result{}, err // a conflict: retried
		}
		return ctrl.Result{}, r.setStatus(ctx, &site, false)
	}
	// The spec is pushed: is it rolled out? The cache may not have seen
	// the update yet (the fix: then it is not ready, and the Deployment's
	// event brings us back once the cache has it).
	if !r.trustCache && !shows(&site, &dep) {
		return ctrl.Result{}, r.setStatus(ctx, &site, false)
	}
	// The mistake, with trustCache: dep may be the Deployment as it was
	// before this operator's own update, rolled out at its old image.
	return ctrl.Result{}, r.setStatus(ctx, &site, rolledOut(&dep))
}

// setStatus records that the Site's spec is pushed, and whether it is
// ready.
func (r *Reconciler) setStatus(ctx context.Context, site *Site, ready bool) error {
	if site.Status.ObservedGeneration == site.Generation && site.Status.Ready == ready {
		return nil
	}
	site.Status.ObservedGeneration, site.Status.Ready = site.Generation, ready
	return r.Client.Status().Update(ctx, site)
}

// desired writes the Site's spec into dep.
func desired(site *Site, dep *appsv1.Deployment) {
	labels := map[string]string{"site": site.Name}
	replicas := site.Spec.Replicas
	dep.Spec.Replicas = &replicas
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	dep.Spec.Template.Labels = labels
	dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "site", Image: site.Spec.Image}}
}

// shows reports whether dep asks for what site asks for.
func shows(site *Site, dep *appsv1.Deployment) bool {
	c := dep.Spec.Template.Spec.Containers
	return len(c) == 1 && c[0].Image == site.Spec.Image && dep.Spec.Replicas != nil && *dep.Spec.Replicas == site.Spec.Replicas
}

// rolledOut reports whether dep's status shows its spec rolled out: its
// generation observed, every replica updated and available, none old.
func rolledOut(dep *appsv1.Deployment) bool {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	st := dep.Status
	return st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want
}
