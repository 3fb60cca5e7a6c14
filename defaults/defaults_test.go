package defaults

import (
	"math"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// templateSpec is a pod spec with one container, as users write it.
func templateSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}
}

// defaultedTemplateSpec is templateSpec after kube-apiserver's defaults.
func defaultedTemplateSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SecurityContext: &corev1.PodSecurityContext{},
		TerminationGracePeriodSeconds: ptr[int64](30), SchedulerName: corev1.DefaultSchedulerName,
	}
}

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: templateSpec()}
}

func defaultedTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: defaultedTemplateSpec()}
}

// TestMinimal defaults a minimal object of every kind and compares with
// what kube-apiserver v1.37 stores for it (checked side by side with a
// real one by controllerruntime/e2e's TestKindsSideBySide).
func TestMinimal(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	tests := []struct {
		name    string
		in, out runtime.Object
	}{
		{"Deployment", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: sel, Template: template()}},
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Replicas: ptr[int32](1), Selector: sel, Template: defaultedTemplate(),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
				RevisionHistoryLimit: ptr[int32](10), ProgressDeadlineSeconds: ptr[int32](600),
			}}},
		{"Deployment Recreate", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
			&appsv1.Deployment{Spec: appsv1.DeploymentSpec{
				Replicas: ptr[int32](1), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				RevisionHistoryLimit: ptr[int32](10), ProgressDeadlineSeconds: ptr[int32](600), Template: corev1.PodTemplateSpec{Spec: defaultedEmptySpec()},
			}}},
		{"ReplicaSet", &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: template()}},
			&appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](1), Selector: sel, Template: defaultedTemplate()}}},
		{"StatefulSet", &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Selector: sel, Template: template(),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}},
			&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
				Replicas: ptr[int32](1), Selector: sel, Template: defaultedTemplate(),
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec:       corev1.PersistentVolumeClaimSpec{VolumeMode: ptr(corev1.PersistentVolumeFilesystem)},
					Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
				}},
				PodManagementPolicy: appsv1.OrderedReadyPodManagement,
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](0), MaxUnavailable: ptr(intstr.FromInt32(1))}},
				RevisionHistoryLimit: ptr[int32](10),
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
			}}},
		{"StatefulSet OnDelete", &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
			&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
				Replicas: ptr[int32](1), Template: corev1.PodTemplateSpec{Spec: defaultedEmptySpec()},
				PodManagementPolicy: appsv1.OrderedReadyPodManagement, RevisionHistoryLimit: ptr[int32](10),
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
			}}},
		{"StatefulSet RollingUpdate without parameters", &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}},
			&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
				Replicas: ptr[int32](1), Template: corev1.PodTemplateSpec{Spec: defaultedEmptySpec()},
				PodManagementPolicy: appsv1.OrderedReadyPodManagement, RevisionHistoryLimit: ptr[int32](10),
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
			}}},
		{"DaemonSet", &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Selector: sel, Template: template()}},
			&appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Selector: sel, Template: defaultedTemplate(),
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}},
				RevisionHistoryLimit: ptr[int32](10),
			}}},
		{"Job", &batchv1.Job{Spec: batchv1.JobSpec{Template: template()}},
			&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: batchv1.JobSpec{
				Parallelism: ptr[int32](1), Completions: ptr[int32](1), BackoffLimit: ptr[int32](6),
				CompletionMode: ptr(batchv1.NonIndexedCompletion), Suspend: ptr(false),
				PodReplacementPolicy: ptr(batchv1.TerminatingOrFailed), ManualSelector: ptr(false), Template: defaultedTemplate(),
			}}},
		{"Job indexed with a pod failure policy", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"own": "x"}}, Spec: batchv1.JobSpec{
			Parallelism: ptr[int32](3), BackoffLimitPerIndex: ptr[int32](2), Template: template(),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}}},
			&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"own": "x"}}, Spec: batchv1.JobSpec{
				Parallelism: ptr[int32](3), BackoffLimitPerIndex: ptr[int32](2), BackoffLimit: ptr[int32](math.MaxInt32),
				CompletionMode: ptr(batchv1.NonIndexedCompletion), Suspend: ptr(false),
				PodReplacementPolicy: ptr(batchv1.Failed), ManualSelector: ptr(false), Template: defaultedTemplate(),
				PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				}}},
			}}},
		{"CronJob", &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template()}}}},
			&batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr(false),
				SuccessfulJobsHistoryLimit: ptr[int32](3), FailedJobsHistoryLimit: ptr[int32](1),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: defaultedTemplate()}}}}},
		{"Pod", &corev1.Pod{Spec: templateSpec()},
			&corev1.Pod{Spec: func() corev1.PodSpec { s := defaultedTemplateSpec(); s.EnableServiceLinks = ptr(true); return s }()}},
		{"ReplicationController", &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Template: ptr(template())}},
			&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: corev1.ReplicationControllerSpec{
				Replicas: ptr[int32](1), Selector: map[string]string{"app": "a"}, Template: ptr(defaultedTemplate())}}},
		{"ReplicationController without template", &corev1.ReplicationController{},
			&corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Replicas: ptr[int32](1)}}},
		{"Service", &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster)}}},
		{"Service LoadBalancer with ClientIP affinity", &corev1.Service{
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP,
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}, {Hostname: "lb"}}}}},
			&corev1.Service{
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP,
					SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr[int32](10800)}},
					Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
					ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
					AllocateLoadBalancerNodePorts: ptr(true)},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
					{IP: "1.2.3.4", IPMode: ptr(corev1.LoadBalancerIPModeVIP)}, {Hostname: "lb"}}}}}},
		{"Service ExternalName", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com",
			SessionAffinityConfig: &corev1.SessionAffinityConfig{}}},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", SessionAffinity: corev1.ServiceAffinityNone}}},
		{"Secret", &corev1.Secret{StringData: map[string]string{"a": "x"}},
			&corev1.Secret{Type: corev1.SecretTypeOpaque, StringData: map[string]string{"a": "x"}}},
		{"ConfigMap", &corev1.ConfigMap{}, &corev1.ConfigMap{Data: map[string]string{}}},
		{"PersistentVolumeClaim", &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.0001")}}}},
			&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr(corev1.PersistentVolumeFilesystem),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1m")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}},
		{"PersistentVolume", &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}},
			&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr(corev1.HostPathUnset)}},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, VolumeMode: ptr(corev1.PersistentVolumeFilesystem)},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}}},
		{"Endpoints", &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}},
			&corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}}},
		{"Node", &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}},
			&corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
		{"HorizontalPodAutoscaler", &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5}},
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, MinReplicas: ptr[int32](1),
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)}}}}}}},
		{"HorizontalPodAutoscaler with a behavior", &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](60)}}}},
			&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, MinReplicas: ptr[int32](1),
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)}}}},
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](0), SelectPolicy: ptr(autoscalingv2.MaxChangePolicySelect),
						Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](60), SelectPolicy: ptr(autoscalingv2.MaxChangePolicySelect),
						Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
				}}}},
		{"NetworkPolicy", &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}}}},
			&networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP)}}}}}}},
		{"IngressClass", &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Parameters: &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n"}}},
			&networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Parameters: &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n", Scope: ptr("Cluster")}}}},
		{"RoleBinding", &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "s"}}},
			&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "s"}}}},
		{"ClusterRoleBinding", &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "g"}}},
			&rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "g"}}}},
		{"EndpointSlice", &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr[int32](80)}}},
			&discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr[int32](80), Name: ptr(""), Protocol: ptr(corev1.ProtocolTCP)}}}},
		{"Role has no defaults", &rbacv1.Role{}, &rbacv1.Role{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.DeepCopyObject()
			if !Object(got) {
				t.Fatalf("Object(%T) = false", got)
			}
			if diff := cmp.Diff(tt.out, got); diff != "" {
				t.Errorf("defaults (-want +got):\n%s", diff)
			}
			again := got.DeepCopyObject()
			Object(again)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("a second call changed (-first +second):\n%s", diff)
			}
		})
	}
}

// defaultedEmptySpec is an empty pod spec after the defaults.
func defaultedEmptySpec() corev1.PodSpec {
	s := defaultedTemplateSpec()
	s.Containers = nil
	return s
}

func TestObjectUnknownType(t *testing.T) {
	if Object(&metav1.Status{}) {
		t.Error("Object(*metav1.Status) = true, want false")
	}
	if Object(nil) {
		t.Error("Object(nil) = true, want false")
	}
}

// TestNil calls every function with a nil object: nothing happens.
func TestNil(t *testing.T) {
	for _, f := range []any{
		Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, Pod, PodSpec, PodStatus, ReplicationController, Service, Secret,
		ConfigMap, PersistentVolumeClaim, PersistentVolume, Endpoints, Node, HorizontalPodAutoscaler, NetworkPolicy,
		IngressClass, RoleBinding, ClusterRoleBinding, EndpointSlice,
	} {
		fn := reflect.ValueOf(f)
		fn.Call([]reflect.Value{reflect.Zero(fn.Type().In(0))})
	}
	for _, obj := range []runtime.Object{(*appsv1.Deployment)(nil), (*corev1.Pod)(nil), (*rbacv1.Role)(nil)} {
		Object(obj)
	}
}

// TestPodSpec covers the nested defaults of a rich pod spec.
func TestPodSpec(t *testing.T) {
	probe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
	}
	in := &corev1.Pod{Spec: corev1.PodSpec{
		DeprecatedServiceAccount: "old", HostNetwork: true, TerminationGracePeriodSeconds: ptr[int64](-5),
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0005")}}}},
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com:5000/team/app:latest",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{Key: "k"}}}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			LivenessProbe: probe(), ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}, PeriodSeconds: 5},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "none"},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr[int32](0o400)}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			}}}},
			{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/x/y"}}},
			{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
		},
	}, Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}}
	want := &corev1.Pod{Spec: corev1.PodSpec{
		ServiceAccountName: "old", DeprecatedServiceAccount: "old", HostNetwork: true, TerminationGracePeriodSeconds: ptr[int64](1),
		DNSPolicy: corev1.DNSClusterFirst, RestartPolicy: corev1.RestartPolicyAlways, SecurityContext: &corev1.PodSecurityContext{},
		SchedulerName: corev1.DefaultSchedulerName, EnableServiceLinks: ptr(true),
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports: []corev1.ContainerPort{{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}}}},
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com:5000/team/app:latest", ImagePullPolicy: corev1.PullAlways,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
				{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{Key: "k", Optional: ptr(false)}}}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/", Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Service: ptr("")}},
				TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/", Scheme: corev1.URISchemeHTTP}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "none", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr[int32](0o644)}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr[int32](0o400)}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](3600)}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}},
			}}}},
			{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/x/y", PullPolicy: corev1.PullAlways}}},
			{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr(corev1.PersistentVolumeFilesystem)}}}}},
		},
	}, Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}}
	got := in.DeepCopy()
	Pod(got)
	// Quantities compare by value: cmp would see their caches.
	opt := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, got, opt); diff != "" {
		t.Errorf("Pod (-want +got):\n%s", diff)
	}
	again := got.DeepCopy()
	Pod(again)
	if diff := cmp.Diff(got, again, opt); diff != "" {
		t.Errorf("a second call changed (-first +second):\n%s", diff)
	}
}

func TestImagePullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"library/nginx", corev1.PullAlways},
		{"docker.io/library/nginx:latest", corev1.PullAlways},
		{"localhost/app", corev1.PullAlways},
		{"localhost:5000/app:v1", corev1.PullIfNotPresent},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"Registry.Example.com/team/app", corev1.PullAlways}, // upper case is fine in a domain
		{"[::1]:5000/app", corev1.PullAlways},
		{"nginx@sha256:" + hex64, corev1.PullIfNotPresent},
		{"nginx:latest@sha256:" + hex64, corev1.PullAlways},
		{"nginx:1.2@sha256:" + hex64, corev1.PullIfNotPresent},
		// References that do not parse get IfNotPresent, whatever their tag.
		{"", corev1.PullIfNotPresent},
		{"Nginx", corev1.PullIfNotPresent},
		{"team/Nginx:latest", corev1.PullIfNotPresent},
		{"nginx:", corev1.PullIfNotPresent},
		{"nginx@sha256:abc", corev1.PullIfNotPresent},
		{"nginx:latest@sha256:" + hex64[:63] + "A", corev1.PullIfNotPresent},
		{"nginx:latest@md5:" + hex64, corev1.PullIfNotPresent},
		{hex64, corev1.PullIfNotPresent},
		{"nginx bad", corev1.PullIfNotPresent},
		{"a/b//c", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := pullPolicy(tt.image); got != tt.want {
			t.Errorf("pullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
