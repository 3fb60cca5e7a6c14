package deployment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/examples/webapp"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// A custom resource gets the Deployment controller's rollouts: one sync of
// a new WebApp (package examples/webapp) creates its first ReplicaSet,
// controlled by the WebApp, and writes the WebApp's status and revision.
// The readers and the client here are a map; in an operator they are
// informer caches and the API.
func ExampleNewWorkloadReconciler() {
	replicas := int32(3)
	app := &webapp.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web", Generation: 1, ResourceVersion: "1"},
		Spec:       webapp.Spec{Replicas: &replicas, Image: "nginx:1.27"},
	}
	api := &webAppAPI{app: app}
	r, err := deployment.NewWorkloadReconciler(deployment.WorkloadConfig[*webapp.WebApp]{
		Kind:      webapp.Kind,
		Workloads: reconcile.GetterFunc[*webapp.WebApp](api.get),
		ReplicaSets: reconcile.ListerFunc[*appsv1.ReplicaSet](func(context.Context, string, labels.Selector) ([]*appsv1.ReplicaSet, error) {
			return api.rss, nil
		}),
		Pods: reconcile.ByControllerFunc[*corev1.Pod](func(context.Context, string, types.UID) ([]*corev1.Pod, error) {
			return nil, nil
		}),
		Client: api,
	})
	if err != nil {
		panic(err)
	}
	if _, err := r.Reconcile(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}); err != nil {
		panic(err)
	}
	for _, rs := range api.rss {
		ref := metav1.GetControllerOf(rs)
		fmt.Printf("created %s: %d × %s, controlled by %s %s\n", rs.Name, *rs.Spec.Replicas, rs.Spec.Template.Spec.Containers[0].Image, ref.Kind, ref.Name)
	}
	st := api.app.Status
	fmt.Printf("status: revision %s, observedGeneration %d, %d unavailable\n",
		api.app.Annotations[rollout.RevisionAnnotation], st.ObservedGeneration, st.UnavailableReplicas)
	fmt.Println("writes:", strings.Join(api.writes, ", "))
	// Output:
	// created web-7bf9d48d5b: 3 × nginx:1.27, controlled by WebApp web
	// status: revision 1, observedGeneration 1, 3 unavailable
	// writes: create ReplicaSet web-7bf9d48d5b, update WebApp status
}

// webAppAPI is one WebApp and its ReplicaSets, as a
// deployment.WorkloadClient.
type webAppAPI struct {
	app    *webapp.WebApp
	rss    []*appsv1.ReplicaSet
	writes []string
}

func (a *webAppAPI) get(context.Context, types.NamespacedName) (*webapp.WebApp, error) {
	return a.app.DeepCopy(), nil
}

func (a *webAppAPI) CreateReplicaSet(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rs = rs.DeepCopy()
	rs.UID, rs.ResourceVersion = types.UID("uid-"+rs.Name), "1"
	a.rss = append(a.rss, rs)
	a.writes = append(a.writes, "create ReplicaSet "+rs.Name)
	return rs.DeepCopy(), nil
}

func (a *webAppAPI) UpdateWorkloadStatus(_ context.Context, w *webapp.WebApp) (*webapp.WebApp, error) {
	a.app = w.DeepCopy()
	a.writes = append(a.writes, "update WebApp status")
	return w, nil
}

var errNotInExample = errors.New("not in this example")

func (a *webAppAPI) UpdateReplicaSet(context.Context, *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return nil, errNotInExample
}

func (a *webAppAPI) DeleteReplicaSet(context.Context, types.NamespacedName, types.UID) error {
	return errNotInExample
}

func (a *webAppAPI) PatchReplicaSet(context.Context, types.NamespacedName, types.PatchType, []byte) (*appsv1.ReplicaSet, error) {
	return nil, errNotInExample
}

func (a *webAppAPI) GetReplicaSet(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return nil, errNotInExample
}

func (a *webAppAPI) UpdateWorkload(context.Context, *webapp.WebApp) (*webapp.WebApp, error) {
	return nil, errNotInExample
}
