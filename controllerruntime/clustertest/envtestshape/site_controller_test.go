package envtestshape

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The specs poll with Eventually's defaults: one second, every 10 ms.

var _ = Describe("Site controller", func() {
	var key types.NamespacedName

	BeforeEach(func() {
		key = types.NamespacedName{Namespace: "default", Name: "shop-" + randomSuffix()}
		site := &Site{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Spec: SiteSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)}}
		Expect(k8sClient.Create(ctx, site)).To(Succeed())
	})

	It("creates a Deployment controlled by the Site", func() {
		dep := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, dep) }).Should(Succeed())
		site := &Site{}
		Expect(k8sClient.Get(ctx, key, site)).To(Succeed())
		Expect(metav1.IsControlledBy(dep, site)).To(BeTrue())
		Expect(dep.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		Expect(dep.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "nginx:1.27")))
	})

	It("reports Available once every pod is ready", func() {
		Eventually(func(g Gomega) {
			site := &Site{}
			g.Expect(k8sClient.Get(ctx, key, site)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(site.Status.Conditions, "Available")).To(BeTrue())
			g.Expect(site.Status.ReadyReplicas).To(Equal(int32(2)))
		}).Should(Succeed())
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": key.Name})).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
	})

	It("rolls out a new image and scales", func() {
		Eventually(func(g Gomega) {
			site := &Site{}
			g.Expect(k8sClient.Get(ctx, key, site)).To(Succeed())
			site.Spec.Image, site.Spec.Replicas = "nginx:1.28", ptr.To[int32](3)
			g.Expect(k8sClient.Update(ctx, site)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			site := &Site{}
			g.Expect(k8sClient.Get(ctx, key, site)).To(Succeed())
			g.Expect(site.Status.ObservedGeneration).To(Equal(site.Generation))
			g.Expect(meta.IsStatusConditionTrue(site.Status.Conditions, "Available")).To(BeTrue())
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": key.Name})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(3))
			g.Expect(pods.Items).To(HaveEach(HaveField("Spec.Containers", ConsistOf(HaveField("Image", "nginx:1.28")))))
		}).Should(Succeed())
	})

	It("deletes the Deployment and its pods with the Site", func() {
		Eventually(func() error { return k8sClient.Get(ctx, key, &appsv1.Deployment{}) }).Should(Succeed())
		Expect(k8sClient.Delete(ctx, &Site{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}})).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{})) }).Should(BeTrue())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": key.Name})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).Should(Succeed())
	})
})

// randomSuffix keeps the specs' Sites apart, as envtest suites do when
// they share one API server.
func randomSuffix() string {
	return rand.String(5)
}
