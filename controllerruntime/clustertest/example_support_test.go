package clustertest_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// asTest runs f as a test function would run, with a *testing.T of its
// own, and reports whether it passed. The examples of this package need
// one (Test and Explore run benches in testing/synctest bubbles, which
// only a *testing.T can start) and an Example function has none: in your
// package, the body of f is the body of a func TestXxx(t *testing.T).
//
// It runs f through testing.RunTests under the name of the example
// calling it, so that the go test flags that select and repeat tests
// (-run, -count, -cpu) select and repeat f with the example; f may run
// several times (-count), so it keeps its result for the example to print
// once. The testing package's own lines for f (-v) go to stderr, not to
// the example's output.
func asTest(name string, f func(t *testing.T)) bool {
	stdout := os.Stdout
	os.Stdout = os.Stderr
	defer func() { os.Stdout = stdout }()
	return testing.RunTests(matchString, []testing.InternalTest{{Name: name, F: f}})
}

// matchString is go test's matcher of -run and -skip patterns.
func matchString(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }

// shopReconciler is the operator of the examples: each ConfigMap labelled
// app gets a Deployment of the image its data names (data.image), and the
// annotation ready, "true" once that Deployment is available, else
// "false".
//
// With generateName (the mistake) it finds its Deployment by label in the
// Manager's cache and creates one with a generated name when it finds
// none: a reconcile that runs before the cache has seen its previous
// create makes a second Deployment. With a fixed name (the fix) that
// second create is refused (AlreadyExists) and ignored.
type shopReconciler struct {
	client.Client
	generateName bool
}

func (r *shopReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil || cm.Labels["app"] == "" {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var ds appsv1.DeploymentList
	if err := r.List(ctx, &ds, client.InNamespace(cm.Namespace), client.MatchingLabels{"app": cm.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(ds.Items) == 0 {
		d := shopDeployment(&cm, r.generateName)
		if err := controllerutil.SetControllerReference(&cm, d, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
			return ctrl.Result{}, err
		}
		ds.Items = append(ds.Items, *d)
	}
	d := ds.Items[0]
	ready := strconv.FormatBool(d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas)
	if cm.Annotations["ready"] == ready {
		return ctrl.Result{}, nil
	}
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "ready", ready)
	return ctrl.Result{}, r.Update(ctx, &cm) // a 409 is returned, and the key retried
}

// shopDeployment is the Deployment of cm: 2 replicas of its image.
func shopDeployment(cm *corev1.ConfigMap, generateName bool) *appsv1.Deployment {
	labels := map[string]string{"app": cm.Name}
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: cm.Data["image"]}}},
			},
		},
	}
	if generateName {
		d.GenerateName = cm.Name + "-"
	} else {
		d.Name = cm.Name
	}
	return d
}

// setupShop registers the operator with mgr: it reconciles ConfigMaps
// labelled app, and the Deployments they own.
func setupShop(mgr ctrl.Manager, generateName bool) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Complete(&shopReconciler{Client: mgr.GetClient(), generateName: generateName})
}

// shopConfigMap is the ConfigMap that asks for the shop.
func shopConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Data:       map[string]string{"image": "shop:1"},
	}
}

// readyConfigMaps counts the ConfigMaps annotated ready=true.
func readyConfigMaps(t testing.TB, c *clustertest.Cluster) int {
	var l corev1.ConfigMapList
	if err := c.Client().List(t.Context(), &l); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cm := range l.Items {
		if cm.Annotations["ready"] == "true" {
			n++
		}
	}
	return n
}
