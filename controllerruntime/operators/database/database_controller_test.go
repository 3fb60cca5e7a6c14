package database

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The specs poll every 10 ms (Eventually's default), for up to 10 s (the
// suite's default).

var _ = Describe("Database controller", func() {
	var key types.NamespacedName

	BeforeEach(func() {
		key = types.NamespacedName{Namespace: "default", Name: "orders-" + rand.String(5)}
		db := &Database{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Spec: DatabaseSpec{Image: "postgres:17", Replicas: ptr.To[int32](2), Storage: "2Gi"}}
		Expect(k8sClient.Create(ctx, db)).To(Succeed())
	})

	It("applies a StatefulSet, a backup claim and a migration Job, each controlled by the Database", func() {
		db := &Database{}
		Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
		sts, pvc, job := &appsv1.StatefulSet{}, &corev1.PersistentVolumeClaim{}, &batchv1.Job{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, sts)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: BackupClaimName(key.Name)}, pvc)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: MigrationJobName(key.Name, "postgres:17")}, job)).To(Succeed())
		}).Should(Succeed())
		for _, obj := range []client.Object{sts, pvc, job} {
			Expect(metav1.IsControlledBy(obj, db)).To(BeTrue(), "%T %s", obj, obj.GetName())
			Expect(obj.GetManagedFields()).To(ContainElement(And(
				HaveField("Manager", FieldOwner), HaveField("Operation", metav1.ManagedFieldsOperationApply))), "%T %s", obj, obj.GetName())
		}
		Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		Expect(sts.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "postgres:17")))
		// Defaults the API server sets, as on a real cluster.
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement))
		Expect(sts.Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
		Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("2Gi")))
		Expect(job.Spec.Template.Spec.Volumes).To(ConsistOf(HaveField("PersistentVolumeClaim.ClaimName", BackupClaimName(key.Name))))
		Expect(job.Spec.Selector).NotTo(BeNil()) // the API server generates it
		Expect(job.Spec.BackoffLimit).To(HaveValue(Equal(int32(3))))
	})

	It("takes back a field another manager changed", func() {
		Eventually(func() error { return k8sClient.Get(ctx, key, &appsv1.StatefulSet{}) }).Should(Succeed())
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, sts)).To(Succeed())
			sts.Spec.Replicas = ptr.To[int32](5)
			g.Expect(k8sClient.Update(ctx, sts, client.FieldOwner("kubectl-edit"))).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, sts)).To(Succeed())
			g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(2))))
			owners := map[string]bool{}
			for _, e := range sts.ManagedFields {
				if e.FieldsV1 != nil && containsField(e.FieldsV1.Raw, `"f:replicas"`) {
					owners[e.Manager] = true
				}
			}
			g.Expect(owners).To(Equal(map[string]bool{FieldOwner: true}))
		}).Should(Succeed())
	})

	It("reports Ready once the replicas are ready and the migration has completed", func() {
		jobKey := types.NamespacedName{Namespace: key.Namespace, Name: MigrationJobName(key.Name, "postgres:17")}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, &appsv1.StatefulSet{})).To(Succeed())
			g.Expect(k8sClient.Get(ctx, jobKey, &batchv1.Job{})).To(Succeed())
		}).Should(Succeed())
		By("the StatefulSet controller's part, written by the test (neither envtest nor the bench runs it)")
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, sts)).To(Succeed())
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 2, ReadyReplicas: 2,
				CurrentReplicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
			g.Expect(k8sClient.Status().Update(ctx, sts)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			g.Expect(db.Status.ReadyReplicas).To(Equal(int32(2)))
			g.Expect(meta.FindStatusCondition(db.Status.Conditions, "Ready")).To(HaveField("Reason", "Migrating"))
		}).Should(Succeed())
		By("the Job controller's part")
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, jobKey, job)).To(Succeed())
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
			}}
			g.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, "Ready")).To(BeTrue())
			g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
			g.Expect(db.Status.MigrationJob).To(Equal(jobKey.Name))
			g.Expect(db.ManagedFields).To(ContainElement(And(HaveField("Manager", FieldOwner),
				HaveField("Operation", metav1.ManagedFieldsOperationApply), HaveField("Subresource", "status"))))
		}).Should(Succeed())
	})

	It("applies a new image to the StatefulSet and a new migration Job", func() {
		Eventually(func() error { return k8sClient.Get(ctx, key, &appsv1.StatefulSet{}) }).Should(Succeed())
		Eventually(func(g Gomega) {
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			db.Spec.Image, db.Spec.Replicas = "postgres:18", ptr.To[int32](3)
			g.Expect(k8sClient.Update(ctx, db)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, sts)).To(Succeed())
			g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(3))))
			g.Expect(sts.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "postgres:18")))
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: MigrationJobName(key.Name, "postgres:18")}, job)).To(Succeed())
			g.Expect(job.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "postgres:18")))
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
			g.Expect(meta.FindStatusCondition(db.Status.Conditions, "Ready")).To(HaveField("Status", metav1.ConditionFalse))
		}).Should(Succeed())
	})

	It("says in its status what is wrong with a bad spec", func() {
		Eventually(func(g Gomega) {
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			db.Spec.Storage = "two gigabytes"
			g.Expect(k8sClient.Update(ctx, db)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			db := &Database{}
			g.Expect(k8sClient.Get(ctx, key, db)).To(Succeed())
			c := meta.FindStatusCondition(db.Status.Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("InvalidSpec"))
			g.Expect(c.Message).To(ContainSubstring(`spec.storage "two gigabytes"`))
			g.Expect(c.ObservedGeneration).To(Equal(db.Generation))
		}).Should(Succeed())
	})

	It("deletes what it owns with the Database", func() {
		if onEnvtest {
			Skip("envtest runs no garbage collector")
		}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: MigrationJobName(key.Name, "postgres:17")}, &batchv1.Job{})
		}).Should(Succeed())
		Expect(k8sClient.Delete(ctx, &Database{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.StatefulSet{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: BackupClaimName(key.Name)}, &corev1.PersistentVolumeClaim{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: MigrationJobName(key.Name, "postgres:17")}, &batchv1.Job{}))).To(BeTrue())
		}).Should(Succeed())
	})
})

// containsField reports whether the fieldsV1 JSON raw names field.
func containsField(raw []byte, field string) bool {
	return strings.Contains(string(raw), field)
}
