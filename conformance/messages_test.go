package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// Every string the controllers put into an API object (a condition's
// message) or an Event, checked in two ways: the table holds upstream's
// exact text (from the v1.37.1 sources named in each case), and each case
// runs upstream and ctrlkit on the same world and requires both to write
// exactly that text. Users' alerts and dashboards match on these strings.
//
// The messages of the ordinary flow (ScalingReplicaSet events, the
// Progressing and Available conditions) are also compared on random worlds
// by TestDeploymentSync; this table adds the failures and the branches the
// generators do not reach (rollbacks, an empty selector, pause/resume).

// apiError is a pod or ReplicaSet create/delete failure as the API
// server returns it.
var (
	quotaErr = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-x",
		errors.New("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"))
	rsQuotaErr = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web-x",
		errors.New("exceeded quota: q, requested: count/replicasets.apps=1, used: count/replicasets.apps=5, limited: count/replicasets.apps=5"))
	internalErr    = apierrors.NewInternalError(errors.New("etcd down"))
	terminatingErr = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods "web-x" is forbidden: unable to create new content in namespace ns because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}}}}
)

// failOn makes the fake clientset fail verb on resource with err.
func failOn(verb, resource string, err error) func(*fake.Clientset) {
	return func(c *fake.Clientset) {
		c.PrependReactor(verb, resource, func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err })
	}
}

// messages is what a sync wrote that users read: events as "Type Reason
// Message", and conditions as "Type=Status Reason: Message".
type messages struct {
	Events     []string
	Conditions []string
}

func TestMessages(t *testing.T) {
	ctx := quietCtx()
	rsCases := []struct {
		name     string
		source   string // where upstream's text comes from
		replicas int32
		pods     int
		react    func(*fake.Clientset)
		want     messages
	}{
		{name: "pod created", source: "controller_utils.go:614",
			replicas: 1, want: messages{Events: []string{"Normal SuccessfulCreate Created pod: "}}}, // the fake clientset names no pod
		{name: "pod create refused by quota", source: "controller_utils.go:600, replica_set_utils.go:99 (message: the API error)",
			replicas: 2, react: failOn("create", "pods", quotaErr), want: messages{
				Events:     []string{`Warning FailedCreate Error creating: pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`},
				Conditions: []string{`ReplicaFailure=True FailedCreate: pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`}}},
		{name: "pod create in a terminating namespace", source: "controller_utils.go:599, replica_set.go:683 (silent)",
			replicas: 2, react: failOn("create", "pods", terminatingErr), want: messages{}},
		{name: "pod deleted", source: "controller_utils.go:634",
			replicas: 0, pods: 1, want: messages{Events: []string{"Normal SuccessfulDelete Deleted pod: p0"}}},
		{name: "pod delete fails", source: "controller_utils.go:631-632",
			replicas: 0, pods: 1, react: failOn("delete", "pods", internalErr), want: messages{
				Events:     []string{"Warning FailedDelete Error deleting: Internal error occurred: etcd down"},
				Conditions: []string{"ReplicaFailure=True FailedDelete: unable to delete pods: Internal error occurred: etcd down"}}},
	}
	for _, tc := range rsCases {
		t.Run("replicaset/"+tc.name, func(t *testing.T) {
			w := messageRSWorld(tc.replicas, tc.pods)
			u, o := upstreamRSMessages(ctx, w, tc.react), oursRSMessages(ctx, t, w, tc.react)
			if d := cmp.Diff(tc.want, u); d != "" {
				t.Errorf("upstream's text (%s) is not the table's (-table +upstream):\n%s", tc.source, d)
			}
			if d := cmp.Diff(tc.want, o); d != "" {
				t.Errorf("ours differs from upstream's text (%s) (-table +ours):\n%s", tc.source, d)
			}
		})
	}

	deployCases := []struct {
		name   string
		source string
		world  func() deployWorld
		react  func(*fake.Clientset)
		want   messages
	}{
		{name: "ReplicaSet create refused by quota", source: "sync.go:273-282",
			world: func() deployWorld { return messageDeployWorld(nil) }, react: failOn("create", "replicasets", rsQuotaErr), want: messages{
				Events: []string{`Warning ReplicaSetCreateError Failed to create new replica set "web-74f8f75d46": replicasets.apps "web-x" is forbidden: ` +
					`exceeded quota: q, requested: count/replicasets.apps=1, used: count/replicasets.apps=5, limited: count/replicasets.apps=5`},
				Conditions: []string{`Progressing=False ReplicaSetCreateError: Failed to create new replica set "web-74f8f75d46": replicasets.apps "web-x" is forbidden: ` +
					`exceeded quota: q, requested: count/replicasets.apps=1, used: count/replicasets.apps=5, limited: count/replicasets.apps=5`}}},
		{name: "ReplicaSet create in a terminating namespace", source: "sync.go:265-268 (silent)",
			world: func() deployWorld { return messageDeployWorld(nil) }, react: failOn("create", "replicasets", terminatingErr), want: messages{}},
		{name: "ReplicaSet created", source: "sync.go:286, sync.go:291, sync.go:527",
			world: func() deployWorld { return messageDeployWorld(nil) }, want: messages{
				Events: []string{"Normal ScalingReplicaSet Scaled up replica set web-74f8f75d46 from 0 to 2"},
				Conditions: []string{"Available=False MinimumReplicasUnavailable: Deployment does not have minimum availability.",
					`Progressing=True NewReplicaSetCreated: Created new replica set "web-74f8f75d46"`}}},
		{name: "selecting all pods", source: "deployment_controller.go:602",
			world: func() deployWorld {
				return messageDeployWorld(func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} })
			}, want: messages{Events: []string{"Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required."}}},
		{name: "paused", source: "sync.go:95, sync.go:527",
			world: func() deployWorld { return messageDeployWorld(func(d *appsv1.Deployment) { d.Spec.Paused = true }) }, want: messages{
				Conditions: []string{"Available=False MinimumReplicasUnavailable: Deployment does not have minimum availability.",
					"Progressing=Unknown DeploymentPaused: Deployment is paused"}}},
		{name: "rollback without history", source: "rollback.go:45",
			world: func() deployWorld {
				return messageDeployWorld(func(d *appsv1.Deployment) {
					d.Annotations = map[string]string{"deprecated.deployment.rollback.to": "0"}
				})
			}, want: messages{Events: []string{"Normal ScalingReplicaSet Scaled up replica set web-74f8f75d46 from 0 to 2",
				"Warning DeploymentRollbackRevisionNotFound Unable to find last revision."},
				Conditions: []string{`Progressing=True NewReplicaSetCreated: Created new replica set "web-74f8f75d46"`}}},
		{name: "rollback to a missing revision", source: "rollback.go:68",
			world: func() deployWorld {
				return messageDeployWorld(func(d *appsv1.Deployment) {
					d.Annotations = map[string]string{"deprecated.deployment.rollback.to": "7"}
				})
			}, want: messages{Events: []string{"Normal ScalingReplicaSet Scaled up replica set web-74f8f75d46 from 0 to 2",
				"Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."},
				Conditions: []string{`Progressing=True NewReplicaSetCreated: Created new replica set "web-74f8f75d46"`}}},
		{name: "rollback to the current template", source: "rollback.go:97",
			world: func() deployWorld {
				return messageDeployWorld(func(d *appsv1.Deployment) {
					d.Annotations = map[string]string{"deprecated.deployment.rollback.to": "1"}
				})
			}, want: messages{Events: []string{"Normal ScalingReplicaSet Scaled up replica set web-74f8f75d46 from 0 to 2",
				`Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "web"`},
				Conditions: []string{`Progressing=True NewReplicaSetCreated: Created new replica set "web-74f8f75d46"`}}},
		{name: "rollback", source: "rollback.go:63",
			world: func() deployWorld { return messageRollbackWorld() }, want: messages{
				Events: []string{"Normal ScalingReplicaSet Scaled up replica set web-7fc488f459 from 0 to 2",
					`Normal DeploymentRollback Rolled back deployment "web" to revision 1`},
				Conditions: []string{`Progressing=True NewReplicaSetCreated: Created new replica set "web-7fc488f459"`}}},
	}
	for _, tc := range deployCases {
		t.Run("deployment/"+tc.name, func(t *testing.T) {
			w := tc.world()
			u, o := upstreamDeployMessages(ctx, w, tc.react), oursDeployMessages(ctx, t, w, tc.react)
			if d := cmp.Diff(tc.want, u); d != "" {
				t.Errorf("upstream's text (%s) is not the table's (-table +upstream):\n%s", tc.source, d)
			}
			if d := cmp.Diff(tc.want, o); d != "" {
				t.Errorf("ours differs from upstream's text (%s) (-table +ours):\n%s", tc.source, d)
			}
		})
	}
}

// messageRSWorld is a ReplicaSet "web" of replicas with n ready pods.
func messageRSWorld(replicas int32, n int) rsWorld {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}},
	}
	w := rsWorld{rs: rs}
	for i := range n {
		w.pods = append(w.pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i),
			UID: types.UID(fmt.Sprintf("p%d-uid", i)), ResourceVersion: "1", Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return w
}

func upstreamRSMessages(ctx context.Context, w rsWorld, react func(*fake.Clientset)) messages {
	h := newUpstreamRSHarness(ctx, w)
	rec := record.NewFakeRecorder(100)
	unexportedField(h.rsc, "podControl").Set(reflect.ValueOf(controller.PodControlInterface(controller.RealPodControl{KubeClient: h.client, Recorder: rec})))
	if react != nil {
		react(h.client)
	}
	_ = upstreamSyncReplicaSet(h.rsc, ctx, h.key)
	close(rec.Events)
	var m messages
	for e := range rec.Events {
		m.Events = append(m.Events, e)
	}
	m.Conditions = rsConditions(h.client, w.rs)
	return m
}

func oursRSMessages(ctx context.Context, t *testing.T, w rsWorld, react func(*fake.Clientset)) messages {
	client := fake.NewSimpleClientset(w.objects()...)
	if react != nil {
		react(client)
	}
	var m messages
	rec, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
		ReplicaSets: rsReader{map[types.NamespacedName]*appsv1.ReplicaSet{{Namespace: "ns", Name: "web"}: w.rs}},
		Pods:        podReader{w.pods}, Client: clientWriter{client}, EagerStatus: true,
		Events: replicaset.EventRecorderFunc(func(_ runtime.Object, typ, reason, msg string) {
			m.Events = append(m.Events, typ+" "+reason+" "+msg)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = rec.Reconcile(ctx, types.NamespacedName{Namespace: "ns", Name: "web"})
	m.Conditions = rsConditions(client, w.rs)
	return m
}

func rsConditions(c *fake.Clientset, rs *appsv1.ReplicaSet) []string {
	got, err := c.AppsV1().ReplicaSets(rs.Namespace).Get(context.Background(), rs.Name, metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	var out []string
	for _, c := range got.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

// messageDeployWorld is a new Deployment "web" of 2 replicas without a
// ReplicaSet, edited by mod.
func messageDeployWorld(mod func(*appsv1.Deployment)) deployWorld {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: deployTemplate(0), ProgressDeadlineSeconds: ptr(int32(600)), RevisionHistoryLimit: ptr(int32(10)),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
	}
	if mod != nil {
		mod(d)
	}
	return deployWorld{d: d, now: time.Now()}
}

// messageRollbackWorld is a Deployment on template 1 asking to roll back
// to revision 1, whose ReplicaSet has template 0.
func messageRollbackWorld() deployWorld {
	w := messageDeployWorld(func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"deprecated.deployment.rollback.to": "1"}
		d.Spec.Template = deployTemplate(1)
	})
	tpl := deployTemplate(0)
	hash := controller.ComputeHash(&tpl, nil)
	tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	w.rss = []*appsv1.ReplicaSet{{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "ns", UID: "rs-uid", ResourceVersion: "1", Generation: 1,
			Labels: tpl.Labels, Annotations: map[string]string{annRev: "1"}, CreationTimestamp: metav1.NewTime(w.now.Add(-time.Hour)),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Template: tpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}}},
		Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1},
	}}
	return w
}

func deployObjects(w deployWorld) []runtime.Object {
	objs := []runtime.Object{w.d.DeepCopy()}
	for _, rs := range w.rss {
		objs = append(objs, rs.DeepCopy())
	}
	return objs
}

func upstreamDeployMessages(ctx context.Context, w deployWorld, react func(*fake.Clientset)) messages {
	client := fake.NewSimpleClientset(deployObjects(w)...)
	f := informers.NewSharedInformerFactory(client, 0)
	dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
	dc, err := upstreamdeployment.NewDeploymentController(ctx, dInf, rsInf, podInf, client)
	if err != nil {
		panic(err)
	}
	unexportedField(dc, "eventBroadcaster").Interface().(record.EventBroadcaster).Shutdown()
	rec := record.NewFakeRecorder(100)
	unexportedField(dc, "eventRecorder").Set(reflect.ValueOf(record.EventRecorder(rec)))
	_ = dInf.Informer().GetIndexer().Add(w.d.DeepCopy())
	for _, rs := range w.rss {
		_ = rsInf.Informer().GetIndexer().Add(rs.DeepCopy())
	}
	if react != nil {
		react(client)
	}
	_ = upstreamSyncDeployment(dc, ctx, "ns/web")
	close(rec.Events)
	var m messages
	for e := range rec.Events {
		m.Events = append(m.Events, e)
	}
	m.Conditions = deployConditions(client)
	return m
}

func oursDeployMessages(ctx context.Context, t *testing.T, w deployWorld, react func(*fake.Clientset)) messages {
	client := fake.NewSimpleClientset(deployObjects(w)...)
	if react != nil {
		react(client)
	}
	st := deployment.State{Deployment: w.d.DeepCopy(), ReplicaSets: cloneRSs(w.rss), Pods: map[types.UID][]*corev1.Pod{}}
	plan, err := deployment.Sync(st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var m messages
	_, _ = deployment.WritePlan(ctx, deployClient{client}, deployment.EventRecorderFunc(func(_ runtime.Object, typ, reason, msg string) {
		m.Events = append(m.Events, typ+" "+reason+" "+msg)
	}), plan)
	m.Conditions = deployConditions(client)
	return m
}

func deployConditions(c *fake.Clientset) []string {
	d, err := c.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	var out []string
	for _, c := range d.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	slices.Sort(out)
	return out
}

// deployClient adapts a clientset to deployment.Client.
type deployClient struct{ c *fake.Clientset }

func (d deployClient) CreateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return d.c.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func (d deployClient) UpdateReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return d.c.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
}

func (d deployClient) DeleteReplicaSet(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	return d.c.AppsV1().ReplicaSets(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (d deployClient) PatchReplicaSet(ctx context.Context, key types.NamespacedName, pt types.PatchType, data []byte) (*appsv1.ReplicaSet, error) {
	return d.c.AppsV1().ReplicaSets(key.Namespace).Patch(ctx, key.Name, pt, data, metav1.PatchOptions{})
}

func (d deployClient) GetReplicaSet(ctx context.Context, key types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return d.c.AppsV1().ReplicaSets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

func (d deployClient) UpdateDeployment(ctx context.Context, dep *appsv1.Deployment) (*appsv1.Deployment, error) {
	return d.c.AppsV1().Deployments(dep.Namespace).Update(ctx, dep, metav1.UpdateOptions{})
}

func (d deployClient) UpdateDeploymentStatus(ctx context.Context, dep *appsv1.Deployment) (*appsv1.Deployment, error) {
	return d.c.AppsV1().Deployments(dep.Namespace).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
}

var _ deployment.Client = deployClient{}
