package database

import (
	"context"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = "database-controller"

// DatabaseReconciler applies, for each Database, a StatefulSet of its
// replicas, a PersistentVolumeClaim for its backups and a migration Job
// for its image, each controlled by the Database, and applies the
// Database's status: Ready once every replica of the current spec is
// ready and the migration Job has completed. Every write is a
// server-side apply with ForceOwnership: a field another manager changes
// is taken back at the next reconcile.
type DatabaseReconciler struct {
	client.Client
}

// SetupWithManager registers the reconciler with mgr: it reconciles a
// Database when it or anything it owns changes.
func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Database{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Named("database").
		Complete(r)
}

// Reconcile applies what one Database owns and its status.
func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var db Database
	if err := r.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !db.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector deletes what it owns
	}
	storage := db.Spec.Storage
	if storage == "" {
		storage = "1Gi"
	}
	size, err := resource.ParseQuantity(storage)
	if err != nil {
		// Bad input: say so in the status, and wait for a new spec.
		return ctrl.Result{}, r.applyStatus(ctx, &db, 0, "", metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
			Reason: "InvalidSpec", Message: fmt.Sprintf("spec.storage %q: %v", db.Spec.Storage, err)})
	}
	replicas := int32(1)
	if db.Spec.Replicas != nil {
		replicas = *db.Spec.Replicas
	}
	owner := metav1ac.OwnerReference().WithAPIVersion(GroupVersion.String()).WithKind("Database").
		WithName(db.Name).WithUID(db.UID).WithController(true).WithBlockOwnerDeletion(true)
	labels := map[string]string{"app.kubernetes.io/name": "database", "app.kubernetes.io/instance": db.Name}
	apply := []client.ApplyOption{client.FieldOwner(FieldOwner), client.ForceOwnership}

	claim := BackupClaimName(db.Name)
	pvc := corev1ac.PersistentVolumeClaim(claim, db.Namespace).WithOwnerReferences(owner).WithLabels(labels).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: size})))
	if err := r.Apply(ctx, pvc, apply...); err != nil {
		return ctrl.Result{}, fmt.Errorf("backup claim of %s: %w", req.Name, err)
	}

	sts := appsv1ac.StatefulSet(db.Name, db.Namespace).WithOwnerReferences(owner).WithLabels(labels).
		WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(replicas).WithServiceName(db.Name).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
				WithContainers(corev1ac.Container().WithName("db").WithImage(db.Spec.Image).
					WithPorts(corev1ac.ContainerPort().WithName("db").WithContainerPort(5432))))))
	if err := r.Apply(ctx, sts, apply...); err != nil {
		return ctrl.Result{}, fmt.Errorf("statefulset of %s: %w", req.Name, err)
	}

	jobName := MigrationJobName(db.Name, db.Spec.Image)
	job := batchv1ac.Job(jobName, db.Namespace).WithOwnerReferences(owner).WithLabels(labels).
		WithSpec(batchv1ac.JobSpec().WithBackoffLimit(3).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
				WithRestartPolicy(corev1.RestartPolicyNever).
				WithContainers(corev1ac.Container().WithName("migrate").WithImage(db.Spec.Image).WithArgs("migrate").
					WithVolumeMounts(corev1ac.VolumeMount().WithName("backups").WithMountPath("/backups"))).
				WithVolumes(corev1ac.Volume().WithName("backups").
					WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(claim))))))
	if err := r.Apply(ctx, job, apply...); err != nil {
		return ctrl.Result{}, fmt.Errorf("migration job of %s: %w", req.Name, err)
	}

	// What the StatefulSet and Job controllers report, from the cache; a
	// change of either reconciles again.
	var live appsv1.StatefulSet
	if err := r.Get(ctx, types.NamespacedName{Namespace: db.Namespace, Name: db.Name}, &live); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	var liveJob batchv1.Job
	migrated := false
	if err := r.Get(ctx, types.NamespacedName{Namespace: db.Namespace, Name: jobName}, &liveJob); err == nil {
		migrated = jobComplete(&liveJob)
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	st := live.Status
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReplicasNotReady",
		Message: fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, replicas)}
	stsDone := live.Generation > 0 && st.ObservedGeneration >= live.Generation &&
		st.ReadyReplicas == replicas && st.UpdatedReplicas == replicas && st.Replicas == replicas
	switch {
	case stsDone && migrated:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "Ready", fmt.Sprintf("%d replicas ready, migrated by job %s", replicas, jobName)
	case stsDone:
		ready.Reason, ready.Message = "Migrating", fmt.Sprintf("waiting for job %s to complete", jobName)
	}
	return ctrl.Result{}, r.applyStatus(ctx, &db, st.ReadyReplicas, jobName, ready)
}

// applyStatus applies the status of db with the condition ready, as an
// unstructured apply configuration of the status subresource.
func (r *DatabaseReconciler) applyStatus(ctx context.Context, db *Database, readyReplicas int32, job string, ready metav1.Condition) error {
	ready.ObservedGeneration = db.Generation
	status := DatabaseStatus{Conditions: append([]metav1.Condition(nil), db.Status.Conditions...),
		ReadyReplicas: readyReplicas, MigrationJob: job, ObservedGeneration: db.Generation}
	meta.SetStatusCondition(&status.Conditions, ready)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(), "kind": "Database",
		"metadata": map[string]any{"name": db.Name, "namespace": db.Namespace},
		"status":   m,
	}}
	if err := r.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("status of %s: %w", db.Name, err)
	}
	return nil
}

// BackupClaimName is the name of the PersistentVolumeClaim of a
// Database's backups.
func BackupClaimName(db string) string { return db + "-backups" }

// MigrationJobName is the name of the Job that migrates a Database to
// image: one per image, since a Job's template cannot change.
func MigrationJobName(db, image string) string {
	h := fnv.New32a()
	h.Write([]byte(image))
	return fmt.Sprintf("%s-migrate-%08x", db, h.Sum32())
}

// jobComplete reports whether job has the condition Complete=True.
func jobComplete(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
