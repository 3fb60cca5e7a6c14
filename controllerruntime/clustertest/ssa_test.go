package clustertest_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/testsupport"
)

// webApplyConfig is a Deployment as an operator applies it.
func webApplyConfig(name string, replicas int32, image string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": name}
	return appsv1ac.Deployment(name, "default").WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(replicas).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage(image)))))
}

// fieldsOf returns the fieldsV1 of manager's entry.
func fieldsOf(t *testing.T, obj metav1.Object, manager, subresource string) map[string]any {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Subresource == subresource {
			var m map[string]any
			if err := json.Unmarshal(e.FieldsV1.Raw, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("%s has no entry of %s (subresource %q): %v", obj.GetName(), manager, subresource, testsupport.Managers(obj))
	return nil
}

// TestServerSideApply applies a Deployment with controller-runtime's
// client.Apply, lets the built-in controllers roll it out, and checks
// who owns what: the applier its fields, kube-controller-manager the
// Deployment's status and revision and the ReplicaSet and pods it
// creates, the kubelet the pods' status, as on a real cluster.
func TestServerSideApply(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		cl := c.Client()
		if err := cl.Apply(ctx, webApplyConfig("web", 2, "nginx:1"), client.FieldOwner("my-operator")); err != nil {
			t.Fatal(err)
		}
		key := types.NamespacedName{Namespace: "default", Name: "web"}
		c.MustRunUntil("web rolled out", rolledOut(t, c, key), time.Hour)

		var d appsv1.Deployment
		if err := cl.Get(ctx, key, &d); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"kube-controller-manager/Update/status", "my-operator/Apply"}, testsupport.Managers(&d)); diff != "" {
			t.Errorf("Deployment managers (-want +got):\n%s", diff)
		}
		kcm := fieldsOf(t, &d, "kube-controller-manager", "status")
		if _, ok := kcm["f:metadata"].(map[string]any)["f:annotations"].(map[string]any)["f:deployment.kubernetes.io/revision"]; !ok {
			t.Errorf("kube-controller-manager's status entry %v; want the revision annotation in it", kcm)
		}
		var rss appsv1.ReplicaSetList
		if err := cl.List(ctx, &rss); err != nil || len(rss.Items) != 1 {
			t.Fatalf("%d ReplicaSets, %v", len(rss.Items), err)
		}
		if diff := cmp.Diff([]string{"kube-controller-manager/Update", "kube-controller-manager/Update/status"}, testsupport.Managers(&rss.Items[0])); diff != "" {
			t.Errorf("ReplicaSet managers (-want +got):\n%s", diff)
		}
		var pods corev1.PodList
		if err := cl.List(ctx, &pods); err != nil || len(pods.Items) != 2 {
			t.Fatalf("%d pods, %v", len(pods.Items), err)
		}
		if diff := cmp.Diff([]string{"kube-controller-manager/Update", "kubelet/Update/status"}, testsupport.Managers(&pods.Items[0])); diff != "" {
			t.Errorf("pod managers (-want +got):\n%s", diff)
		}

		// Another manager's different replicas conflict; forced, they win,
		// and the operator's next apply conflicts in turn.
		err := cl.Apply(ctx, appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)), client.FieldOwner("hpa"))
		if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "my-operator": .spec.replicas` {
			t.Fatalf("conflicting apply: %v", err)
		}
		if err := cl.Apply(ctx, appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)),
			client.FieldOwner("hpa"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("web scaled to 3", func() bool {
			var pods corev1.PodList
			if err := cl.List(ctx, &pods); err != nil {
				t.Fatal(err)
			}
			return len(pods.Items) == 3
		}, time.Hour)
		err = cl.Apply(ctx, webApplyConfig("web", 2, "nginx:1"), client.FieldOwner("my-operator"))
		if !apierrors.IsConflict(err) {
			t.Errorf("the operator's apply after hpa took replicas: %v; want a conflict", err)
		}
		// Without replicas, the operator gives them up.
		ac := webApplyConfig("web", 0, "nginx:1")
		ac.Spec.Replicas = nil
		if err := cl.Apply(ctx, ac, client.FieldOwner("my-operator")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestServerSideApplyClients applies through the other clients operators
// use: a client-go clientset's typed Apply and ApplyStatus, and
// controller-runtime's Patch(ctx, obj, client.Apply) of an unstructured
// object.
func TestServerSideApplyClients(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1, Disable: clustertest.DeploymentController | clustertest.ReplicaSetController}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		cs, err := kubernetes.NewForConfig(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().Deployments("default").Apply(ctx, webApplyConfig("web", 1, "nginx:1"), metav1.ApplyOptions{FieldManager: "clientset"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Generation != 1 || *d.Spec.RevisionHistoryLimit != 10 || !slices.Equal(testsupport.Managers(d), []string{"clientset/Apply"}) {
			t.Errorf("applied: generation %d, revisionHistoryLimit %d, managers %v", d.Generation, *d.Spec.RevisionHistoryLimit, testsupport.Managers(d))
		}
		d, err = cs.AppsV1().Deployments("default").ApplyStatus(ctx,
			appsv1ac.Deployment("web", "default").WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(1).WithReplicas(1)),
			metav1.ApplyOptions{FieldManager: "status-writer"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.ObservedGeneration != 1 || !slices.Equal(testsupport.Managers(d), []string{"clientset/Apply", "status-writer/Apply/status"}) {
			t.Errorf("after ApplyStatus: %+v, managers %v", d.Status, testsupport.Managers(d))
		}

		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings", "namespace": "default"},
			"data":     map[string]any{"mode": "fast"},
		}}
		if err := c.Client().Patch(ctx, u, client.Apply, client.FieldOwner("patcher")); err != nil { // the path older operators take
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := c.Client().Get(ctx, client.ObjectKeyFromObject(u), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["mode"] != "fast" || !slices.Equal(testsupport.Managers(&cm), []string{"patcher/Apply"}) {
			t.Errorf("ConfigMap %v managers %v", cm.Data, testsupport.Managers(&cm))
		}
		// A client without a fieldManager is named after its User-Agent, the program.
		cm.Data["other"] = "x"
		if err := c.Client().Update(ctx, &cm); err != nil {
			t.Fatal(err)
		}
		if got := testsupport.Managers(&cm); len(got) != 2 || got[0] != "clustertest.test/Update" {
			t.Errorf("after an update without a field owner: %v", got)
		}
	})
}

// TestServerSideApplyCustomKind applies an object of a kind registered
// through Options.Types (a Go type, no CRD): the bench gives it deduced
// types, as controller-runtime's fake client does, so its lists are
// atomic (a CRD's schema could make them merge by key).
func TestServerSideApplyCustomKind(t *testing.T) {
	opts := clustertest.Options{Scheme: appScheme(t), Types: []client.Object{&App{}}, Disable: clustertest.AllControllers}
	clustertest.Test(t, opts, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		app := func(fields map[string]any) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": appGV.String(), "kind": "App",
				"metadata": map[string]any{"name": "shop", "namespace": "default"}}}
			for k, v := range fields {
				u.Object[k] = v
			}
			return u
		}
		ac := client.ApplyConfigurationFromUnstructured(app(map[string]any{"spec": map[string]any{"image": "shop:1", "replicas": int64(2)}}))
		if err := c.Client().Apply(ctx, ac, client.FieldOwner("owner")); err != nil {
			t.Fatal(err)
		}
		err := c.Client().Apply(ctx, client.ApplyConfigurationFromUnstructured(app(map[string]any{"spec": map[string]any{"replicas": int64(5)}})), client.FieldOwner("scaler"))
		if !apierrors.IsConflict(err) {
			t.Errorf("conflicting apply to a custom kind: %v", err)
		}
		ac = client.ApplyConfigurationFromUnstructured(app(map[string]any{"status": map[string]any{"ready": true}}))
		if err := c.Client().SubResource("status").Apply(ctx, ac, client.FieldOwner("owner")); err != nil {
			t.Fatal(err)
		}
		var got App
		if err := c.Client().Get(ctx, types.NamespacedName{Namespace: "default", Name: "shop"}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Replicas != 2 || !got.Status.Ready || !slices.Equal(testsupport.Managers(&got), []string{"owner/Apply", "owner/Apply/status"}) {
			t.Errorf("App %+v %+v managers %v", got.Spec, got.Status, testsupport.Managers(&got))
		}
	})
}

// TestServerSideApplyStatefulSetAndJob applies the kinds operators own
// besides Deployments with controller-runtime's client.Apply: the bench
// gives them client-go's schemas, so their lists merge by key (a second
// manager's container joins the applier's), and the API defaults stay
// nobody's. A StatefulSet is then scaled through its scale subresource;
// a Job's status is applied, and its server-set selector and labels are
// not its applier's.
func TestServerSideApplyStatefulSetAndJob(t *testing.T) {
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		ctx := t.Context()
		cl := c.Client()
		labels := map[string]string{"app": "db"}
		sts := appsv1ac.StatefulSet("db", "default").WithSpec(appsv1ac.StatefulSetSpec().
			WithServiceName("db").WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("db").WithImage("postgres:17")))))
		if err := cl.Apply(ctx, sts, client.FieldOwner("db-operator")); err != nil {
			t.Fatal(err)
		}
		sidecar := appsv1ac.StatefulSet("db", "default").WithSpec(appsv1ac.StatefulSetSpec().
			WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
				WithContainers(corev1ac.Container().WithName("exporter").WithImage("exporter:1")))))
		if err := cl.Apply(ctx, sidecar, client.FieldOwner("injector")); err != nil {
			t.Fatal(err)
		}
		var s appsv1.StatefulSet
		if err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ct := range s.Spec.Template.Spec.Containers {
			names = append(names, ct.Name)
		}
		if !slices.Equal(names, []string{"db", "exporter"}) || s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
			t.Errorf("containers %v (want both, merged by name), podManagementPolicy %q (want the default)", names, s.Spec.PodManagementPolicy)
		}
		if diff := cmp.Diff([]string{"db-operator/Apply", "injector/Apply"}, testsupport.Managers(&s)); diff != "" {
			t.Errorf("StatefulSet managers (-want +got):\n%s", diff)
		}
		spec := fieldsOf(t, &s, "db-operator", "")["f:spec"].(map[string]any)
		if _, ok := spec["f:replicas"]; !ok {
			t.Errorf("db-operator's fields %v; want spec.replicas", spec)
		}
		if _, ok := spec["f:podManagementPolicy"]; ok {
			t.Errorf("db-operator's fields %v; a default is nobody's", spec)
		}
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		if err := cl.SubResource("scale").Update(ctx, &s, client.WithSubResourceBody(scale), client.FieldOwner("autoscaler")); err != nil {
			t.Fatal(err)
		}
		if err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		if *s.Spec.Replicas != 3 || !slices.Contains(testsupport.Managers(&s), "autoscaler/Update/scale") {
			t.Errorf("after a scale update: replicas %d, managers %v", *s.Spec.Replicas, testsupport.Managers(&s))
		}

		job := batchv1ac.Job("migrate", "default").WithSpec(batchv1ac.JobSpec().WithBackoffLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().WithRestartPolicy(corev1.RestartPolicyNever).
				WithContainers(corev1ac.Container().WithName("migrate").WithImage("migrate:1")))))
		if err := cl.Apply(ctx, job, client.FieldOwner("db-operator")); err != nil {
			t.Fatal(err)
		}
		status := batchv1ac.Job("migrate", "default").WithStatus(batchv1ac.JobStatus().WithActive(1))
		if err := cl.SubResource("status").Apply(ctx, status, client.FieldOwner("job-runner")); err != nil {
			t.Fatal(err)
		}
		var j batchv1.Job
		if err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "migrate"}, &j); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"db-operator/Apply", "job-runner/Apply/status"}, testsupport.Managers(&j)); diff != "" {
			t.Errorf("Job managers (-want +got):\n%s", diff)
		}
		if j.Spec.Selector == nil || j.Status.Active != 1 {
			t.Errorf("Job selector %v (want the server's), active %d", j.Spec.Selector, j.Status.Active)
		}
		if _, ok := fieldsOf(t, &j, "db-operator", "")["f:spec"].(map[string]any)["f:selector"]; ok {
			t.Errorf("the Job's server-set selector is its applier's")
		}
	})
}
