package clustertest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// storeReconciler is a user's operator of stateful apps: each App gets a
// StatefulSet, a migration Job and a backup PersistentVolumeClaim, built
// as operators build them (no defaults set), and owned by the App.
type storeReconciler struct {
	client.Client
	ownedEvents atomic.Int32 // reconciles after the first of each App
}

func (r *storeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app App
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	labels := map[string]string{"app": app.Name}
	meta := metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}
	objs := []client.Object{
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			ServiceName: app.Name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: app.Spec.Image}}}},
		}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: app.Name + "-migrate", Namespace: app.Namespace}, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "migrate", Image: app.Spec.Image}}}},
		}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: app.Name + "-backup", Namespace: app.Namespace},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
	}
	created := 0
	for _, obj := range objs {
		if err := controllerutil.SetControllerReference(&app, obj, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		err := r.Create(ctx, obj)
		switch {
		case err == nil:
			created++
		case !isAlreadyExists(err):
			return ctrl.Result{}, err
		}
	}
	if created == 0 {
		r.ownedEvents.Add(1)
	}
	return ctrl.Result{}, nil
}

func isAlreadyExists(err error) bool {
	return client.IgnoreAlreadyExists(err) == nil
}

// TestOwnsStatefulSetJobAndClaim: a controller that owns StatefulSets,
// Jobs and PersistentVolumeClaims starts on the bench (its informers
// sync), what it creates comes back with kube-apiserver's defaults and
// server-set fields, changes of what it owns reach it, and deleting the
// owner collects them all.
func TestOwnsStatefulSetJobAndClaim(t *testing.T) {
	clustertest.Test(t, benchOptions(t, 1), func(t *testing.T, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		r := &storeReconciler{Client: mgr.GetClient()}
		err := ctrl.NewControllerManagedBy(mgr).For(&App{}).
			Owns(&appsv1.StatefulSet{}).Owns(&batchv1.Job{}).Owns(&corev1.PersistentVolumeClaim{}).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second) // the controller's caches sync
		if err := c.Client().Create(t.Context(), newApp("db", "postgres:17", 1)); err != nil {
			t.Fatal(err)
		}
		ctx, key := t.Context(), client.ObjectKey{Namespace: "default", Name: "db"}
		c.MustRunUntil("the App's claim exists", func() bool {
			return c.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-backup"}, &corev1.PersistentVolumeClaim{}) == nil
		}, time.Minute)

		var sts appsv1.StatefulSet
		if err := c.Client().Get(ctx, key, &sts); err != nil {
			t.Fatalf("the operator's StatefulSet: %v", err)
		}
		s := sts.Spec
		if s.Replicas == nil || *s.Replicas != 1 || s.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
			s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || s.RevisionHistoryLimit == nil || *s.RevisionHistoryLimit != 10 {
			t.Errorf("StatefulSet spec not defaulted: replicas %v, podManagementPolicy %q, updateStrategy %q, revisionHistoryLimit %v",
				s.Replicas, s.PodManagementPolicy, s.UpdateStrategy.Type, s.RevisionHistoryLimit)
		}
		if sts.Generation != 1 {
			t.Errorf("StatefulSet generation %d, want 1", sts.Generation)
		}

		var job batchv1.Job
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-migrate"}, &job); err != nil {
			t.Fatalf("the operator's Job: %v", err)
		}
		uid := string(job.UID)
		if got := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; got != uid {
			t.Errorf("Job selector %v, want the generated controller-uid=%s", job.Spec.Selector, uid)
		}
		if l := job.Spec.Template.Labels; l[batchv1.JobNameLabel] != "db-migrate" || l["controller-uid"] != uid {
			t.Errorf("Job template labels %v, want the generated job-name and controller-uid", l)
		}
		if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 6 || job.Spec.Completions == nil || *job.Spec.Completions != 1 {
			t.Errorf("Job spec not defaulted: backoffLimit %v, completions %v", job.Spec.BackoffLimit, job.Spec.Completions)
		}

		var pvc corev1.PersistentVolumeClaim
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-backup"}, &pvc); err != nil {
			t.Fatalf("the operator's claim: %v", err)
		}
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
			t.Errorf("claim phase %q, volumeMode %v; want Pending and Filesystem", pvc.Status.Phase, pvc.Spec.VolumeMode)
		}

		// A status change of an owned StatefulSet reaches the operator.
		before := r.ownedEvents.Load()
		sts.Status.Replicas, sts.Status.ReadyReplicas = 1, 1
		if err := c.Client().Status().Update(ctx, &sts); err != nil {
			t.Fatal(err)
		}
		c.Settle()
		if r.ownedEvents.Load() == before {
			t.Error("the StatefulSet's status write did not reach the operator that owns it")
		}

		// Deleting the App collects what it owns, across the kinds.
		if err := c.Client().Delete(ctx, newApp("db", "", 0)); err != nil {
			t.Fatal(err)
		}
		c.Settle()
		for _, l := range []client.ObjectList{&appsv1.StatefulSetList{}, &batchv1.JobList{}, &corev1.PersistentVolumeClaimList{}} {
			if err := c.Client().List(ctx, l, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			if n := meta.LenList(l); n != 0 {
				t.Errorf("%T: %d left after the owner was deleted, want 0", l, n)
			}
		}
	})
}
