package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod sets what kube-apiserver v1.37 sets on a Pod on create and update:
// the [PodSpec] defaults, and what only pods get:
//
//   - each container's requests default to its limits for the resources
//     it has a limit but no request for (regular and init containers);
//   - enableServiceLinks true;
//   - a negative terminationGracePeriodSeconds becomes 1;
//   - with hostNetwork, each container port's hostPort defaults to its
//     containerPort (regular and init containers);
//   - status.podIP and status.podIPs are kept in step (podIP wins when
//     they disagree).
//
// The QoS class, the Pending phase and the pod-level resource defaults are
// set by the server's create strategy, not here.
func Pod(p *corev1.Pod) {
	if p == nil {
		return
	}
	s := &p.Spec
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		s.TerminationGracePeriodSeconds = ptr[int64](1)
	}
	for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
		for i := range cs {
			requestsFromLimits(&cs[i].Resources)
		}
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	if s.HostNetwork {
		for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if port := &cs[i].Ports[j]; port.HostPort == 0 {
						port.HostPort = port.ContainerPort
					}
				}
			}
		}
	}
	PodSpec(s)
	PodStatus(&p.Status)
}

// requestsFromLimits copies each limit that has no request into the requests.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// PodStatus sets what kube-apiserver v1.37 sets on a pod's status, on
// every write of the pod or of its status: status.podIP and
// status.podIPs kept in step (podIP wins when they disagree), and the
// quantities of the containers' allocated resources and resources rounded
// up to milli precision.
func PodStatus(st *corev1.PodStatus) {
	if st == nil {
		return
	}
	switch {
	case st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP):
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
	for _, css := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range css {
			roundUp(css[i].AllocatedResources)
			if r := css[i].Resources; r != nil {
				roundUp(r.Limits)
				roundUp(r.Requests)
			}
		}
	}
	roundUp(st.AllocatedResources)
	if r := st.Resources; r != nil {
		roundUp(r.Limits)
		roundUp(r.Requests)
	}
}

// PodSpec sets what kube-apiserver v1.37 sets on every pod spec: of a Pod
// (see [Pod] for what only pods get) and of the pod template of a
// Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob or
// ReplicationController:
//
//   - dnsPolicy ClusterFirst, restartPolicy Always, an empty
//     securityContext, terminationGracePeriodSeconds 30, schedulerName
//     default-scheduler; serviceAccountName and the deprecated
//     serviceAccount kept equal (serviceAccountName wins);
//   - containers (regular, init and ephemeral): imagePullPolicy Always
//     for an image tagged latest or untagged, else IfNotPresent;
//     terminationMessagePath /dev/termination-log and policy File; port
//     protocol TCP; the apiVersion v1 of env fieldRefs; fileKeyRef
//     optional false; probe timeout 1 s, period 10 s, success threshold
//     1 and failure threshold 3; HTTP probes' and hooks' path "/" and
//     scheme HTTP; gRPC probes' service "";
//   - volumes: an emptyDir when no source is set; mode 0644 for secret,
//     configMap, downwardAPI and projected volumes; a projected service
//     account token's expiration of one hour; hostPath type ""; an image
//     volume's pull policy as a container's; the volume mode Filesystem
//     of an ephemeral volume's claim; and the defaults of the in-tree
//     iSCSI, RBD, Azure disk and ScaleIO sources;
//   - resource quantities (containers, overhead, pod-level resources,
//     ephemeral claims) rounded up to milli precision.
func PodSpec(s *corev1.PodSpec) {
	if s == nil {
		return
	}
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(s.Overhead)
	if r := s.Resources; r != nil {
		roundUp(r.Limits)
		roundUp(r.Requests)
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			fieldRef(from.FieldRef)
			if f := from.FileKeyRef; f != nil && f.Optional == nil {
				f.Optional = ptr(false)
			}
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		probe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

// pullPolicy is the pull policy of an image without one: Always for the
// tag latest (which an image with neither tag nor digest has), else (a
// reference that does not parse included) IfNotPresent.
func pullPolicy(image string) corev1.PullPolicy {
	if tag, ok := imageTag(image); ok && tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if g := p.GRPC; g != nil && g.Service == nil {
		g.Service = ptr("")
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func fieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func volume(v *corev1.Volume) {
	src := &v.VolumeSource
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if img := src.Image; img != nil && img.PullPolicy == "" {
		img.PullPolicy = pullPolicy(img.Reference)
	}
	hostPath(src.HostPath)
	if s := src.Secret; s != nil && s.DefaultMode == nil {
		s.DefaultMode = ptr(corev1.SecretVolumeSourceDefaultMode)
	}
	if s := src.ConfigMap; s != nil && s.DefaultMode == nil {
		s.DefaultMode = ptr(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s := src.DownwardAPI; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = ptr(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range s.Items {
			fieldRef(s.Items[i].FieldRef)
		}
	}
	if s := src.Projected; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = ptr(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range s.Sources {
			p := &s.Sources[i]
			if p.DownwardAPI != nil {
				for j := range p.DownwardAPI.Items {
					fieldRef(p.DownwardAPI.Items[j].FieldRef)
				}
			}
			if t := p.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr[int64](3600)
			}
		}
	}
	if s := src.ISCSI; s != nil && s.ISCSIInterface == "" {
		s.ISCSIInterface = "default"
	}
	if s := src.RBD; s != nil {
		rbd(&s.RBDPool, &s.RadosUser, &s.Keyring)
	}
	if s := src.AzureDisk; s != nil {
		azureDisk(s)
	}
	if s := src.ScaleIO; s != nil {
		scaleIO(&s.StorageMode, &s.FSType)
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		claimSpec(&e.VolumeClaimTemplate.Spec)
	}
}

func hostPath(h *corev1.HostPathVolumeSource) {
	if h != nil && h.Type == nil {
		h.Type = ptr(corev1.HostPathUnset)
	}
}

func rbd(pool, user, keyring *string) {
	setEmpty(pool, "rbd")
	setEmpty(user, "admin")
	setEmpty(keyring, "/etc/ceph/keyring")
}

func azureDisk(s *corev1.AzureDiskVolumeSource) {
	if s.CachingMode == nil {
		s.CachingMode = ptr(corev1.AzureDataDiskCachingReadWrite)
	}
	if s.FSType == nil {
		s.FSType = ptr("ext4")
	}
	if s.ReadOnly == nil {
		s.ReadOnly = ptr(false)
	}
	if s.Kind == nil {
		s.Kind = ptr(corev1.AzureSharedBlobDisk)
	}
}

func scaleIO(mode, fsType *string) {
	setEmpty(mode, "ThinProvisioned")
	setEmpty(fsType, "xfs")
}

// claimSpec is what a PersistentVolumeClaim's spec gets, wherever it is.
func claimSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
	}
	roundUp(s.Resources.Limits)
	roundUp(s.Resources.Requests)
}

// roundUp rounds every quantity of l up to milli precision.
func roundUp(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(resource.Milli)
		l[name] = q
	}
}

// targetPort defaults an unset target port of a service port to the port.
func targetPort(port int32, target *intstr.IntOrString) {
	if *target == intstr.FromInt32(0) || *target == intstr.FromString("") {
		*target = intstr.FromInt32(port)
	}
}

func setEmpty[S ~string](s *S, v S) {
	if *s == "" {
		*s = v
	}
}

func ptr[T any](v T) *T { return &v }
