package website

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The specs expect the answers of the webhooks as kube-apiserver words
// them (the same on envtest and on the bench).

// warnings records the Warning headers a client receives.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func website(name string) *Website {
	return &Website{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: WebsiteSpec{Image: "nginx:1.27"}}
}

var _ = Describe("Website webhooks", func() {
	var name string
	BeforeEach(func() { name = "site-" + rand.String(5) })

	It("defaults the replicas and the tier, and labels the tier", func() {
		w := website(name)
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
		Expect(w.Spec.Replicas).To(HaveValue(Equal(int32(1))))
		Expect(w.Spec.Tier).To(Equal(TierFree))
		Expect(w.Labels).To(HaveKeyWithValue(TierLabel, TierFree))
	})

	It("refuses a website without an image", func() {
		w := website(name)
		w.Spec.Image = ""
		err := k8sClient.Create(ctx, w)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal(`admission webhook "vwebsite.kb.io" denied the request: Website.web.ctrlkit.dev "` + name +
			`" is invalid: spec.image: Required value: a website needs an image`))
	})

	It("refuses a free website with more than 3 replicas, but not a pro one", func() {
		w := website(name)
		w.Spec.Replicas = ptr.To[int32](5)
		err := k8sClient.Create(ctx, w)
		Expect(err).To(MatchError(`admission webhook "vwebsite.kb.io" denied the request: Website.web.ctrlkit.dev "` + name +
			`" is invalid: spec.replicas: Invalid value: 5: a free website has at most 3 replicas`))
		w = website(name)
		w.Spec.Replicas, w.Spec.Tier = ptr.To[int32](5), TierPro
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
	})

	It("warns about an image without a tag", func() {
		seen := &warningLog{}
		c := rest.CopyConfig(cfg)
		c.WarningHandler = seen
		cl, err := client.New(c, client.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		w := website(name)
		w.Spec.Image = "nginx"
		Expect(cl.Create(ctx, w)).To(Succeed())
		Expect(seen.list).To(ConsistOf(`image "nginx" has no tag: pin a version`))
	})

	It("refuses to change the tier", func() {
		w := website(name)
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
		w.Spec.Tier = TierPro
		err := k8sClient.Update(ctx, w)
		Expect(err).To(MatchError(`admission webhook "vwebsite.kb.io" denied the request: Website.web.ctrlkit.dev "` + name +
			`" is invalid: spec.tier: Invalid value: "pro": field is immutable`))
	})

	It("refuses to delete a protected website", func() {
		w := website(name)
		w.Annotations = map[string]string{ProtectedAnnotation: "true"}
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
		err := k8sClient.Delete(ctx, w)
		Expect(err).To(MatchError(`admission webhook "vwebsite.kb.io" denied the request: website ` + name +
			` is protected: remove the ` + ProtectedAnnotation + ` annotation first`))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		delete(w.Annotations, ProtectedAnnotation)
		Expect(k8sClient.Update(ctx, w)).To(Succeed())
		Expect(k8sClient.Delete(ctx, w)).To(Succeed())
	})

	It("keeps a Deployment of the website", func() {
		Expect(k8sClient.Create(ctx, website(name))).To(Succeed())
		d := &appsv1.Deployment{}
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, d)
		}).Should(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(1))))
		Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(WebsiteLabel, name))
		Expect(d.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "nginx:1.27")))
	})
})

var _ = Describe("Pod webhook", func() {
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"},
				{Name: "sidecar", Image: "envoy:1.30", Env: []corev1.EnvVar{{Name: WebsiteEnv, Value: "mine"}}}}}}
	}

	It("injects the website's name into a website's pod", func() {
		p := pod("web-"+rand.String(5), map[string]string{WebsiteLabel: "shop"})
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(p.Labels).To(HaveKeyWithValue(InjectedLabel, "true"))
		Expect(p.Spec.Containers[0].Env).To(ConsistOf(corev1.EnvVar{Name: WebsiteEnv, Value: "shop"}))
		Expect(p.Spec.Containers[1].Env).To(ConsistOf(corev1.EnvVar{Name: WebsiteEnv, Value: "mine"}))
	})

	It("leaves other pods alone (objectSelector)", func() {
		p := pod("other-"+rand.String(5), map[string]string{"app": "other"})
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(p.Labels).NotTo(HaveKey(InjectedLabel))
		Expect(p.Spec.Containers[0].Env).To(BeEmpty())
	})
})
