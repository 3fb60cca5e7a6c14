package conformance

import (
	mathrand "math/rand"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	upstreamapps "k8s.io/kubernetes/pkg/apis/apps/v1"
	upstreamautoscaling "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	upstreambatch "k8s.io/kubernetes/pkg/apis/batch/v1"
	upstreamcore "k8s.io/kubernetes/pkg/apis/core/v1"
	upstreamdiscovery "k8s.io/kubernetes/pkg/apis/discovery/v1"
	upstreamnetworking "k8s.io/kubernetes/pkg/apis/networking/v1"
	upstreamrbac "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"sigs.k8s.io/randfill"

	"github.com/ctrlkit/ctrlkit/defaults"
)

// TestDefaultsMatchUpstream fills random objects of every kind package
// defaults knows and checks that its function sets exactly what
// kube-apiserver's generated defaulter (SetObjectDefaults_<Kind>, with the
// v1.37 feature gates at their defaults) sets.
func TestDefaultsMatchUpstream(t *testing.T) {
	type kind struct {
		name     string
		new      func() runtime.Object
		ours     func(runtime.Object)
		upstream func(runtime.Object)
	}
	kinds := []kind{
		{"Deployment", func() runtime.Object { return &appsv1.Deployment{} },
			func(o runtime.Object) { defaults.Deployment(o.(*appsv1.Deployment)) },
			func(o runtime.Object) { upstreamapps.SetObjectDefaults_Deployment(o.(*appsv1.Deployment)) }},
		{"ReplicaSet", func() runtime.Object { return &appsv1.ReplicaSet{} },
			func(o runtime.Object) { defaults.ReplicaSet(o.(*appsv1.ReplicaSet)) },
			func(o runtime.Object) { upstreamapps.SetObjectDefaults_ReplicaSet(o.(*appsv1.ReplicaSet)) }},
		{"StatefulSet", func() runtime.Object { return &appsv1.StatefulSet{} },
			func(o runtime.Object) { defaults.StatefulSet(o.(*appsv1.StatefulSet)) },
			func(o runtime.Object) { upstreamapps.SetObjectDefaults_StatefulSet(o.(*appsv1.StatefulSet)) }},
		{"DaemonSet", func() runtime.Object { return &appsv1.DaemonSet{} },
			func(o runtime.Object) { defaults.DaemonSet(o.(*appsv1.DaemonSet)) },
			func(o runtime.Object) { upstreamapps.SetObjectDefaults_DaemonSet(o.(*appsv1.DaemonSet)) }},
		{"Job", func() runtime.Object { return &batchv1.Job{} },
			func(o runtime.Object) { defaults.Job(o.(*batchv1.Job)) },
			func(o runtime.Object) { upstreambatch.SetObjectDefaults_Job(o.(*batchv1.Job)) }},
		{"CronJob", func() runtime.Object { return &batchv1.CronJob{} },
			func(o runtime.Object) { defaults.CronJob(o.(*batchv1.CronJob)) },
			func(o runtime.Object) { upstreambatch.SetObjectDefaults_CronJob(o.(*batchv1.CronJob)) }},
		{"Pod", func() runtime.Object { return &corev1.Pod{} },
			func(o runtime.Object) { defaults.Pod(o.(*corev1.Pod)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_Pod(o.(*corev1.Pod)) }},
		{"PodTemplate (PodSpec)", func() runtime.Object { return &corev1.PodTemplate{} },
			func(o runtime.Object) { defaults.PodSpec(&o.(*corev1.PodTemplate).Template.Spec) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_PodTemplate(o.(*corev1.PodTemplate)) }},
		{"ReplicationController", func() runtime.Object { return &corev1.ReplicationController{} },
			func(o runtime.Object) { defaults.ReplicationController(o.(*corev1.ReplicationController)) },
			func(o runtime.Object) {
				upstreamcore.SetObjectDefaults_ReplicationController(o.(*corev1.ReplicationController))
			}},
		{"Service", func() runtime.Object { return &corev1.Service{} },
			func(o runtime.Object) { defaults.Service(o.(*corev1.Service)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_Service(o.(*corev1.Service)) }},
		{"Secret", func() runtime.Object { return &corev1.Secret{} },
			func(o runtime.Object) { defaults.Secret(o.(*corev1.Secret)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_Secret(o.(*corev1.Secret)) }},
		{"ConfigMap", func() runtime.Object { return &corev1.ConfigMap{} },
			func(o runtime.Object) { defaults.ConfigMap(o.(*corev1.ConfigMap)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_ConfigMap(o.(*corev1.ConfigMap)) }},
		{"PersistentVolumeClaim", func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
			func(o runtime.Object) { defaults.PersistentVolumeClaim(o.(*corev1.PersistentVolumeClaim)) },
			func(o runtime.Object) {
				upstreamcore.SetObjectDefaults_PersistentVolumeClaim(o.(*corev1.PersistentVolumeClaim))
			}},
		{"PersistentVolume", func() runtime.Object { return &corev1.PersistentVolume{} },
			func(o runtime.Object) { defaults.PersistentVolume(o.(*corev1.PersistentVolume)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_PersistentVolume(o.(*corev1.PersistentVolume)) }},
		{"Endpoints", func() runtime.Object { return &corev1.Endpoints{} },
			func(o runtime.Object) { defaults.Endpoints(o.(*corev1.Endpoints)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_Endpoints(o.(*corev1.Endpoints)) }},
		{"Node", func() runtime.Object { return &corev1.Node{} },
			func(o runtime.Object) { defaults.Node(o.(*corev1.Node)) },
			func(o runtime.Object) { upstreamcore.SetObjectDefaults_Node(o.(*corev1.Node)) }},
		{"HorizontalPodAutoscaler", func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			func(o runtime.Object) { defaults.HorizontalPodAutoscaler(o.(*autoscalingv2.HorizontalPodAutoscaler)) },
			func(o runtime.Object) {
				upstreamautoscaling.SetObjectDefaults_HorizontalPodAutoscaler(o.(*autoscalingv2.HorizontalPodAutoscaler))
			}},
		{"NetworkPolicy", func() runtime.Object { return &networkingv1.NetworkPolicy{} },
			func(o runtime.Object) { defaults.NetworkPolicy(o.(*networkingv1.NetworkPolicy)) },
			func(o runtime.Object) {
				upstreamnetworking.SetObjectDefaults_NetworkPolicy(o.(*networkingv1.NetworkPolicy))
			}},
		{"IngressClass", func() runtime.Object { return &networkingv1.IngressClass{} },
			func(o runtime.Object) { defaults.IngressClass(o.(*networkingv1.IngressClass)) },
			func(o runtime.Object) {
				upstreamnetworking.SetObjectDefaults_IngressClass(o.(*networkingv1.IngressClass))
			}},
		{"RoleBinding", func() runtime.Object { return &rbacv1.RoleBinding{} },
			func(o runtime.Object) { defaults.RoleBinding(o.(*rbacv1.RoleBinding)) },
			func(o runtime.Object) { upstreamrbac.SetObjectDefaults_RoleBinding(o.(*rbacv1.RoleBinding)) }},
		{"ClusterRoleBinding", func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			func(o runtime.Object) { defaults.ClusterRoleBinding(o.(*rbacv1.ClusterRoleBinding)) },
			func(o runtime.Object) {
				upstreamrbac.SetObjectDefaults_ClusterRoleBinding(o.(*rbacv1.ClusterRoleBinding))
			}},
		{"EndpointSlice", func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			func(o runtime.Object) { defaults.EndpointSlice(o.(*discoveryv1.EndpointSlice)) },
			func(o runtime.Object) {
				upstreamdiscovery.SetObjectDefaults_EndpointSlice(o.(*discoveryv1.EndpointSlice))
			}},
	}
	seed := baseSeed(t)
	n := caseCount(t, 20)
	only := onlyCase(t)
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for i := range n {
				if only >= 0 && i != only {
					continue
				}
				r := rngFor(seed, i)
				obj := k.new()
				fillAPIObject(r, obj)
				ours, theirs := obj.DeepCopyObject(), obj.DeepCopyObject()
				k.ours(ours)
				k.upstream(theirs)
				if diff := cmp.Diff(theirs, ours, quantity); diff != "" {
					t.Fatalf("case %d (%s=%d %s=%d): defaults differ (-upstream +ours):\n%s", i, envSeed, seed, envCase, i, diff)
				}
			}
		})
	}
}

// fillAPIObject fills obj at random (most optional fields nil), then
// replaces each string with one of the values the defaulters test (so
// that enums take their real values, images their interesting forms,
// and empty strings are frequent), and each quantity with one that may
// need rounding.
func fillAPIObject(r *rand.Rand, obj runtime.Object) {
	randfill.New().RandSource(mathrand.NewSource(r.Int64())).NilChance(0.6).NumElements(0, 2).MaxDepth(12).Fill(obj)
	scramble(r, reflect.ValueOf(obj).Elem())
}

var defaultsVocabulary = []string{
	"", "", "", "x", "latest", "nginx", "nginx:latest", "nginx:1.2", "Nginx", "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"RollingUpdate", "Recreate", "OnDelete", "OrderedReady", "Parallel", "ClusterIP", "NodePort", "LoadBalancer", "ExternalName",
	"None", "ClientIP", "TCP", "UDP", "User", "Group", "ServiceAccount", "Retain", "Delete", "Always", "Never", "OnFailure",
	"Pending", "Bound", "Indexed", "NonIndexed", "Allow", "Forbid", "Ingress", "Egress", "Cluster", "Namespace", "True", "False", "1.2.3.4",
}

var quantityType = reflect.TypeFor[resource.Quantity]()

func scramble(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(defaultsVocabulary[r.IntN(len(defaultsVocabulary))])
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scramble(r, v.Elem())
		}
	case reflect.Struct:
		if v.Type() == quantityType {
			q := []string{"1", "0.5", "0.0001", "1.0005", "100Mi", "2Gi", "250m", "1e-7"}[r.IntN(8)]
			v.Set(reflect.ValueOf(resource.MustParse(q)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scramble(r, v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scramble(r, v.Index(i))
		}
	case reflect.Map:
		for _, key := range v.MapKeys() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(key))
			scramble(r, val)
			v.SetMapIndex(key, val)
		}
	}
}

// TestImagePullPolicyMatchesUpstream compares the pull policy of images
// made of random pieces (domains, paths, tags and digests, valid or not).
func TestImagePullPolicyMatchesUpstream(t *testing.T) {
	seed := baseSeed(t)
	domains := []string{"", "docker.io/", "localhost/", "localhost:5000/", "Registry.io/", "reg_istry.io/", "[::1]:5000/", "host:port/", "a.b-c.d/", "-bad.io/", "UPPER/"}
	paths := []string{"nginx", "library/nginx", "team/app", "Team/app", "a__b", "a--b", "a._b", "a/b/c", "a//b", "_a", "a-", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ""}
	tags := []string{"", ":latest", ":1.2", ":Latest", ":", ":-x", ":v_1.2-rc", ":a/b"}
	digests := []string{"", "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "@sha256:ABC", "@sha512:0123456789abcdef0123456789abcdef",
		"@md5:0123456789abcdef0123456789abcdef", "@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "@"}
	n := caseCount(t, 4)
	for i := range n {
		r := rngFor(seed, i)
		image := pick(r, domains...) + pick(r, paths...) + pick(r, tags...) + pick(r, digests...)
		if chance(r, 0.05) {
			image = " " + image
		}
		ours := &corev1.PodTemplate{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}}
		theirs := ours.DeepCopy()
		defaults.PodSpec(&ours.Template.Spec)
		upstreamcore.SetObjectDefaults_PodTemplate(theirs)
		if got, want := ours.Template.Spec.Containers[0].ImagePullPolicy, theirs.Template.Spec.Containers[0].ImagePullPolicy; got != want {
			t.Errorf("image %q: pull policy %s, upstream %s", image, got, want)
		}
	}
}
