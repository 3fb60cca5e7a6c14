package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// The tests of this file check that the bench's answers name what is
// stuck: a custom resource by its conditions, a blocked worker, a kind the
// bench does not serve, a request that keeps failing, and the write
// behind a Check violation.

// Gadget is a custom resource with conditions, as most operators' are.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec   `json:"spec,omitempty"`
	Status            GadgetStatus `json:"status,omitempty"`
}

type GadgetSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
}

type GadgetStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = append([]metav1.Condition(nil), g.Status.Conditions...)
	return &out
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Gadget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Gadget)
	}
	return &out
}

// Widget is registered in the scheme, but no bench here serves it.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = append([]Widget(nil), l.Items...)
	return &out
}

func gadgetOptions(t *testing.T) clustertest.Options {
	s := appScheme(t)
	s.AddKnownTypes(appGV, &Gadget{}, &GadgetList{}, &Widget{}, &WidgetList{})
	return clustertest.Options{Seed: 1, Scheme: s, Types: []client.Object{&App{}, &Gadget{}}}
}

// gadgetReconciler makes each Gadget's Deployment and sets its Ready
// condition from the Deployment's ready pods.
type gadgetReconciler struct {
	client.Client
	block chan struct{} // if set, reconciling the Gadget "stuck" waits for it
}

func (r *gadgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name == "stuck" && r.block != nil {
		<-r.block
	}
	var g Gadget
	if err := r.Get(ctx, req.NamespacedName, &g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		labels := map[string]string{"gadget": g.Name}
		d.Spec.Replicas = &g.Spec.Replicas
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: g.Spec.Image}}
		return controllerutil.SetControllerReference(&g, d, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "PodsNotReady",
		Message: fmt.Sprintf("%d of %d pods ready", d.Status.ReadyReplicas, g.Spec.Replicas)}
	if d.Status.ReadyReplicas == g.Spec.Replicas {
		cond.Status, cond.Reason = metav1.ConditionTrue, "PodsReady"
	}
	meta.SetStatusCondition(&g.Status.Conditions, cond)
	return ctrl.Result{}, r.Status().Update(ctx, &g)
}

func startGadgets(t *testing.T, c *clustertest.Cluster, r *gadgetReconciler, extra ...client.Object) {
	mgr := c.NewManager(ctrl.Options{})
	r.Client = mgr.GetClient()
	b := ctrl.NewControllerManagedBy(mgr).For(&Gadget{}).Owns(&appsv1.Deployment{})
	for _, o := range extra {
		b = b.Owns(o)
	}
	if err := b.Complete(r); err != nil {
		t.Fatal(err)
	}
	c.Start(mgr)
}

func gadgetReady(t *testing.T, c *clustertest.Cluster, name string) func() bool {
	return func() bool {
		var g Gadget
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &g); err != nil {
			t.Fatal(err)
		}
		return meta.IsStatusConditionTrue(g.Status.Conditions, "Ready")
	}
}

func wantAll(t *testing.T, msg string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("the message does not say %q:\n%s", w, msg)
		}
	}
}

func TestRunUntilNamesAStuckCustomResourceByItsConditions(t *testing.T) {
	opts := gadgetOptions(t)
	opts.Kubelet.Model = memcluster.ImageModel(map[string]memcluster.PodBehavior{"nginx:broken": {Failure: memcluster.PodBadImage}}, nil)
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startGadgets(t, c, &gadgetReconciler{})
		c.Advance(time.Second)
		g := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: GadgetSpec{Image: "nginx:broken", Replicas: 2}}
		if err := c.Client().Create(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		err := c.RunUntil(gadgetReady(t, c, "web"), 10*time.Minute)
		if !errors.Is(err, clustertest.ErrTimeLimit) {
			t.Fatalf("RunUntil = %v, want ErrTimeLimit", err)
		}
		wantAll(t, err.Error(),
			`gadget default/web: Ready=False reason PodsNotReady message "0 of 2 pods ready"`,
			"deployment default/web: 2 desired, 2 updated, 0 available",
			"container app ImagePullBackOff")
	})
}

func TestRunUntilNamesABlockedWorker(t *testing.T) {
	clustertest.Test(t, gadgetOptions(t), func(t *testing.T, c *clustertest.Cluster) {
		block := make(chan struct{})
		defer close(block) // let the worker go before the bench stops
		startGadgets(t, c, &gadgetReconciler{block: block})
		c.Advance(time.Second)
		g := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: "default"}, Spec: GadgetSpec{Image: "nginx", Replicas: 1}}
		if err := c.Client().Create(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		err := c.RunUntil(gadgetReady(t, c, "stuck"), time.Minute)
		if !errors.Is(err, clustertest.ErrTimeLimit) {
			t.Fatalf("RunUntil = %v, want ErrTimeLimit", err)
		}
		wantAll(t, err.Error(),
			"worker blocked (chan receive) in github.com/ctrlkit/ctrlkit/controllerruntime/clustertest_test.(*gadgetReconciler).Reconcile (stuck_test.go:",
			"gadget default/stuck: no status (never reconciled?)")
	})
}

func TestRunUntilNamesAnUnservedKind(t *testing.T) {
	clustertest.Test(t, gadgetOptions(t), func(t *testing.T, c *clustertest.Cluster) {
		startGadgets(t, c, &gadgetReconciler{}, &Widget{})
		dyn, err := dynamic.NewForConfig(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(appGV.WithResource("widgets")).Namespace("default").List(t.Context(), metav1.ListOptions{}); err == nil {
			t.Fatal("listing widgets: no error from a bench that does not serve them")
		}
		// Before its cache sync timeout (2 minutes) the manager waits.
		err = c.RunUntil(func() bool { return false }, time.Minute)
		if !errors.Is(err, clustertest.ErrTimeLimit) {
			t.Fatalf("RunUntil = %v, want ErrTimeLimit", err)
		}
		wantAll(t, err.Error(),
			"kind source *clustertest_test.Widget not served by the bench: no matches for kind \"Widget\" in version \"apps.example.com/v1\"",
			"not served by the bench: GET /apis/apps.example.com/v1/namespaces/default/widgets (1 requests answered 404)")
	})
}

func TestRunUntilNamesFailingRequests(t *testing.T) {
	opts := gadgetOptions(t)
	opts.Faults = memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "update/status", Resource: "gadgets", Rate: 1, Reason: metav1.StatusReasonConflict}}}
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		startGadgets(t, c, &gadgetReconciler{})
		c.Advance(time.Second)
		g := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: GadgetSpec{Image: "nginx", Replicas: 1}}
		if err := c.Client().Create(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		err := c.RunUntil(gadgetReady(t, c, "web"), time.Minute)
		wantAll(t, fmt.Sprint(err),
			`failing: PUT gadgets/status in default from manager "clustertest.test"`,
			`(the last: default/web: 409 (injected 409 Conflict) at +`)
		trace := strings.Join(c.Trace(), "\n")
		wantAll(t, trace, `request PUT gadgets/status default/web from manager "clustertest.test": 409 (injected 409 Conflict)`,
			`request POST gadgets default/web from client "clustertest.test": 201`)
	})
}

func TestCheckNamesTheWriteBehindAViolation(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		d := webDeployment("web", 2, "nginx:1.27")
		if err := c.Client().Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)

		// An operator that rebuilds the annotations from scratch drops the
		// Deployment controller's revision.
		cfg := c.Config()
		cfg.UserAgent = "webapp-controller/v1.0"
		op, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		d.Annotations = map[string]string{"team": "web"}
		if err := op.Update(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		err = c.Check()
		if err == nil {
			t.Fatal("Check found nothing wrong with a revision that went from 1 to 0")
		}
		wantAll(t, err.Error(), "deployment default/web: RevisionDecreased at +",
			`deployment revision went from 1 to 0, by PUT deployments default/web from config "webapp-controller" (annotation deployment.kubernetes.io/revision removed, annotation team added ("web"))`)
	})
}
