package plugin

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// CauseCode names a cause [Why] found. The codes are stable: scripts and
// alerts may match them.
type CauseCode string

// The causes, pod-level first.
const (
	ImagePullBackOff       CauseCode = "ImagePullBackOff"     // a container cannot pull its image
	CrashLoopBackOff       CauseCode = "CrashLoopBackOff"     // a container keeps exiting
	ContainerConfigError   CauseCode = "ContainerConfigError" // a container cannot be created (missing ConfigMap or Secret, …)
	Unschedulable          CauseCode = "Unschedulable"        // the scheduler cannot place the pod
	ReadinessFailing       CauseCode = "ReadinessFailing"     // running but its readiness probe fails
	StuckTerminating       CauseCode = "StuckTerminating"     // deleted, past its grace period, still there
	QuotaExceeded          CauseCode = "QuotaExceeded"        // pod creation rejected by a ResourceQuota
	AdmissionRejected      CauseCode = "AdmissionRejected"    // pod creation rejected by admission (LimitRange, policy, webhook)
	FailedCreate           CauseCode = "FailedCreate"         // pod creation failed for another reason
	ReplicaSetCreate       CauseCode = "ReplicaSetCreateError"
	Paused                 CauseCode = "Paused"                   // spec.paused is set
	DeadlineExceeded       CauseCode = "ProgressDeadlineExceeded" // Progressing=False/ProgressDeadlineExceeded
	HashCollision          CauseCode = "HashCollision"            // another ReplicaSet holds the name of this template's
	SelectorOverlap        CauseCode = "SelectorOverlap"          // another controller's objects match the selector
	OrphanedReplicaSet     CauseCode = "OrphanedReplicaSet"       // a ReplicaSet matching the selector that no controller owns
	DisruptionBudget       CauseCode = "PodDisruptionBudget"      // a PDB allows no eviction of these pods
	KubeletRejected        CauseCode = "KubeletRejected"          // the kubelet refused to run the pod (OutOfcpu, NodeAffinity, …): it is Failed
	ControllerNotObserving CauseCode = "ControllerNotObserving"   // no controller has acted on the latest generation for too long
	BeingDeleted           CauseCode = "BeingDeleted"             // the Deployment has a deletionTimestamp
	SpecFight              CauseCode = "SpecFight"                // two writers keep changing the spec back and forth
	AutoscalerLimited      CauseCode = "AutoscalerLimited"        // an HPA is at its maxReplicas and wants more
	AutoscalerFailing      CauseCode = "AutoscalerFailing"        // an HPA cannot scale (AbleToScale or ScalingActive False)
)

// Severity says whether a cause stops the rollout.
type Severity string

const (
	// Blocking causes keep the rollout from finishing until fixed.
	Blocking Severity = "Blocking"
	// Warning causes do not stop this rollout but will bite (evictions,
	// drains, confusing selectors).
	Warning Severity = "Warning"
)

// Cause is one thing Why found wrong, with the objects it concerns and
// what would fix it.
type Cause struct {
	Code     CauseCode `json:"code"`
	Severity Severity  `json:"severity"`
	Message  string    `json:"message"`
	// Objects are the concerned objects as kind/name (pod/web-abc-1).
	Objects []string `json:"objects,omitempty"`
	// Detail is the reason text of the first object (a scheduler or
	// kubelet message), when there is one.
	Detail string `json:"detail,omitempty"`
	// Fix says what would unblock it.
	Fix string `json:"fix,omitempty"`
}

// Thresholds decide when a slow pod counts as failing.
type Thresholds struct {
	// NotReady is how long a running pod may stay not ready, with no
	// readiness-probe failure event, before it counts as failing
	// readiness. Zero means 5 minutes.
	NotReady time.Duration
	// Terminating is how long past its deletion timestamp (the end of
	// its grace period) a pod may stay before it counts as stuck. Zero
	// means 10 seconds.
	Terminating time.Duration
	// Unscheduled is how long a pod may stay without a node and without
	// a scheduler's verdict before it counts as unschedulable. Zero means
	// 1 minute.
	Unscheduled time.Duration
	// Unobserved is how long the latest generation may wait for a
	// controller (status.observedGeneration behind metadata.generation)
	// before the controller counts as not running. Zero means 30 seconds.
	Unobserved time.Duration
}

func (t Thresholds) withDefaults() Thresholds {
	if t.NotReady <= 0 {
		t.NotReady = 5 * time.Minute
	}
	if t.Terminating <= 0 {
		t.Terminating = 10 * time.Second
	}
	if t.Unscheduled <= 0 {
		t.Unscheduled = time.Minute
	}
	if t.Unobserved <= 0 {
		t.Unobserved = DefaultUnobserved
	}
	return t
}

// DefaultUnobserved is the default of Thresholds.Unobserved.
const DefaultUnobserved = 30 * time.Second

// podIssue is one pod's problem.
type podIssue struct {
	code    CauseCode
	pod     string
	what    string // the grouping key shown in the message
	detail  string
	fix     string // when it depends on more than the code
	created time.Time
}

// podIssues classifies the unavailable pods of rss (the Deployment's own
// ReplicaSets), oldest pod first within each ReplicaSet.
func podIssues(rss []*appsv1.ReplicaSet, pods []*corev1.Pod, events []*corev1.Event, now time.Time, th Thresholds) []podIssue {
	probeFailed := map[string]string{}
	kubelet := map[string][]*corev1.Event{} // the kubelet's warnings, by pod
	for _, e := range events {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		if e.Reason == "Unhealthy" && strings.HasPrefix(e.Message, "Readiness probe failed") {
			probeFailed[e.InvolvedObject.Name] = e.Message
		}
		if e.Type == corev1.EventTypeWarning {
			kubelet[e.InvolvedObject.Name] = append(kubelet[e.InvolvedObject.Name], e)
		}
	}
	owners := map[types.UID]*appsv1.ReplicaSet{}
	for _, rs := range rss {
		owners[rs.UID] = rs
	}
	var out []podIssue
	sorted := slices.Clone(pods)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp) ||
			(sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) && sorted[i].Name < sorted[j].Name)
	})
	for _, p := range sorted {
		ref := controllerOf(p)
		if ref == nil || owners[ref.UID] == nil {
			continue
		}
		rs := owners[ref.UID]
		if is, ok := classify(p, rs, probeFailed[p.Name], kubelet[p.Name], now, th); ok {
			is.created = p.CreationTimestamp.Time
			out = append(out, is)
		}
	}
	return out
}

func controllerOf(p *corev1.Pod) *struct{ UID types.UID } {
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return &struct{ UID types.UID }{r.UID}
		}
	}
	return nil
}

// classify finds what keeps one pod from being available, if anything
// is wrong with it (a pod that is merely starting is not an issue).
func classify(p *corev1.Pod, rs *appsv1.ReplicaSet, probe string, events []*corev1.Event, now time.Time, th Thresholds) (podIssue, bool) {
	is := podIssue{pod: p.Name}
	if p.DeletionTimestamp != nil {
		past := now.Sub(p.DeletionTimestamp.Time)
		if past < th.Terminating {
			return is, false
		}
		is.code, is.what = StuckTerminating, "terminating past their grace period"
		is.detail = fmt.Sprintf("grace period ended %s ago", past.Round(time.Second))
		if len(p.Finalizers) > 0 {
			is.detail += fmt.Sprintf("; finalizers %s hold it", strings.Join(p.Finalizers, ", "))
		} else if p.Spec.NodeName != "" {
			is.detail += fmt.Sprintf("; the kubelet on node %s has not confirmed", p.Spec.NodeName)
		}
		return is, true
	}
	if p.Status.Phase == corev1.PodFailed {
		if reason, msg, ok := kubeletRejection(p, events); ok {
			is.code, is.what = KubeletRejected, fmt.Sprintf("rejected by the kubelet (%s)", reason)
			is.detail = msg
			if p.Spec.NodeName != "" {
				is.detail += " (node " + p.Spec.NodeName + ")"
			}
			is.fix = rejectionFix(reason)
			return is, true
		}
		return is, false
	}
	if p.Status.Phase == corev1.PodSucceeded {
		return is, false
	}
	if replicaset.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
		return is, false
	}
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
			is.code, is.what, is.detail = ImagePullBackOff, fmt.Sprintf("cannot pull image %q", cs.Image), join(w.Reason, w.Message)
			for _, e := range events {
				if e.Reason == "FailedToRetrieveImagePullSecret" {
					// The kubelet could not read a secret of imagePullSecrets.
					is.what += ": an image pull secret is missing"
					is.detail = e.Message + "\n" + is.detail
					is.fix = "create the missing image pull secret in this namespace (kubectl create secret docker-registry NAME --docker-server=… " +
						"--docker-username=… --docker-password=…) or fix imagePullSecrets in the pod template; the kubelet retries the pull on its own"
					break
				}
			}
			return is, true
		case "CrashLoopBackOff":
			is.code, is.what = CrashLoopBackOff, fmt.Sprintf("crash-looping (container %s)", cs.Name)
			is.detail = crashDetail(cs)
			return is, true
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PreStartHookError":
			is.code, is.what, is.detail = ContainerConfigError, fmt.Sprintf("cannot start container %s", cs.Name), join(w.Reason, w.Message)
			return is, true
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			is.code, is.what, is.detail = Unschedulable, "unschedulable", join(c.Reason, c.Message)
			return is, true
		}
	}
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		if now.Sub(p.CreationTimestamp.Time) < th.Unscheduled {
			return is, false
		}
		is.code, is.what = Unschedulable, "not scheduled"
		is.detail = fmt.Sprintf("no node after %s and no scheduler verdict: is a scheduler running for schedulerName %q?",
			now.Sub(p.CreationTimestamp.Time).Round(time.Second), cmpOr(p.Spec.SchedulerName, corev1.DefaultSchedulerName))
		return is, true
	}
	for _, cs := range statuses {
		if cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil && !cs.Ready {
			is.code, is.what, is.detail = CrashLoopBackOff, fmt.Sprintf("crash-looping (container %s)", cs.Name), crashDetail(cs)
			return is, true
		}
	}
	if replicaset.IsPodReady(p) {
		return is, false // ready, waiting for minReadySeconds
	}
	if p.Status.Phase != corev1.PodRunning {
		return is, false // still starting
	}
	if probe != "" {
		is.code, is.what, is.detail = ReadinessFailing, "failing readiness", probe
		return is, true
	}
	since := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		since = p.Status.StartTime.Time
	}
	if now.Sub(since) >= th.NotReady {
		is.code, is.what = ReadinessFailing, "running but never ready"
		is.detail = fmt.Sprintf("running for %s without passing readiness", now.Sub(since).Round(time.Second))
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Message != "" {
				is.detail += ": " + c.Message
			}
		}
		return is, true
	}
	return is, false
}

func crashDetail(cs corev1.ContainerStatus) string {
	s := fmt.Sprintf("restarted %d times", cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil {
		s += fmt.Sprintf("; last exit code %d", t.ExitCode)
		if t.Reason != "" {
			s += " (" + t.Reason + ")"
		}
		if t.Message != "" {
			s += ": " + t.Message
		}
	}
	if w := cs.State.Waiting; w != nil && w.Message != "" {
		s += "; " + w.Message
	}
	return s
}

func join(reason, msg string) string {
	if msg == "" {
		return reason
	}
	return reason + ": " + msg
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// groupPods turns pod issues into causes, one per (code, what), in order
// of first appearance.
func groupPods(issues []podIssue) []Cause {
	var out []Cause
	var whats []string
	var spans [][2]time.Time // first and last creation of each cause's pods
	idx := map[string]int{}
	for _, is := range issues {
		key := string(is.code) + "\x00" + is.what
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, Cause{Code: is.code, Severity: Blocking, Detail: is.detail, Fix: cmpOr(is.fix, podFix(is.code))})
			whats = append(whats, is.what)
			spans = append(spans, [2]time.Time{is.created, is.created})
		}
		out[i].Objects = append(out[i].Objects, "pod/"+is.pod)
		if is.created.Before(spans[i][0]) {
			spans[i][0] = is.created
		}
		if is.created.After(spans[i][1]) {
			spans[i][1] = is.created
		}
	}
	for i := range out {
		n := len(out[i].Objects)
		out[i].Message = fmt.Sprintf("%d %s %s", n, plural(n, "pod", "pods"), whats[i])
		if out[i].Code == KubeletRejected && n > 1 {
			out[i].Message += fmt.Sprintf(", created within %s: the ReplicaSet controller replaces each rejected pod, and the kubelet rejects the replacement too",
				spans[i][1].Sub(spans[i][0]).Round(time.Second))
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func podFix(c CauseCode) string {
	switch c {
	case ImagePullBackOff:
		return "fix the image reference (or the registry credentials, imagePullSecrets) in the pod template"
	case CrashLoopBackOff:
		return "read the crashing container's logs (kubectl logs --previous) and fix the cause, or roll back"
	case ContainerConfigError:
		return "create the missing ConfigMap/Secret or fix the container's configuration"
	case Unschedulable:
		return "free or add capacity, or relax the pod's resource requests, node selector, affinity or tolerations"
	case ReadinessFailing:
		return "fix the readiness probe's endpoint (or the probe itself) in the new version"
	case StuckTerminating:
		return "find what holds the pod (its finalizers, or a node that is down); as a last resort remove the finalizers or force-delete it"
	case KubeletRejected:
		return rejectionFix("")
	}
	return ""
}

// kubeletRejection reports a pod the kubelet refused at admission: the
// kubelet marks it Failed with its reason and the message "Pod was
// rejected: …", and records a Warning event with the same reason. It
// returns the reason and the message (the event's when the status has
// none).
func kubeletRejection(p *corev1.Pod, events []*corev1.Event) (reason, msg string, ok bool) {
	reason, msg = p.Status.Reason, p.Status.Message
	if !strings.HasPrefix(msg, "Pod was rejected: ") && !rejectionReason(reason) {
		return "", "", false
	}
	if msg == "" {
		for _, e := range events {
			if e.Reason == reason {
				msg = e.Message
			}
		}
	}
	return cmpOr(reason, "UnknownReason"), msg, true
}

// rejectionReason reports whether reason is one the kubelet gives when it
// rejects a pod at admission (pkg/kubelet/lifecycle and the admit
// handlers of v1.37): resource shortages (OutOf…), the scheduler's
// predicates it re-checks, and its managers' refusals.
func rejectionReason(reason string) bool {
	if strings.HasPrefix(reason, "OutOf") {
		return true
	}
	switch reason {
	case "NodeAffinity", "NodeName", "NodePorts", "TaintToleration", "UnexpectedAdmissionError", "UnknownReason",
		"UnexpectedPredicateFailureType", "InvalidNodeInfo", "PodOSSelectorNodeLabelDoesNotMatch", "PodOSNotSupported",
		"InitContainerRestartPolicyForbidden", "SupplementalGroupsPolicyNotSupported", "AppArmor", "PodLevelResourcesNotSupported",
		"PodFeatureUnsupported", "SysctlForbidden", "TopologyAffinityError", "NodeShutdown", "VolumeAttachmentLimitExceeded":
		return true
	}
	return false
}

// rejectionFix says what unblocks pods the kubelet rejects for reason.
func rejectionFix(reason string) string {
	const cleanup = "; then delete the Failed pods (kubectl delete pods --field-selector=status.phase=Failed), or roll back"
	switch {
	case strings.HasPrefix(reason, "OutOf"):
		res := strings.TrimPrefix(reason, "OutOf")
		return fmt.Sprintf("the node lacks %s for the pod's requests: the pod reached it without the scheduler's fit check (spec.nodeName set in the template, "+
			"or the node's allocatable shrank); remove spec.nodeName or lower the %s requests, or free the node", res, res) + cleanup
	case reason == "NodeAffinity", reason == "NodeName", reason == "NodePorts", reason == "TaintToleration":
		return "the node does not satisfy the pod (" + reason + "): the pod was bound to it without the scheduler (spec.nodeName in the template) " +
			"or the node's labels or taints changed; fix the template's nodeName, nodeSelector, affinity, host ports or tolerations" + cleanup
	case reason == "UnexpectedAdmissionError", reason == "TopologyAffinityError":
		return "a kubelet resource manager (device plugin, topology, CPU or memory manager) failed to allocate for the pod: read the kubelet's log on the node, " +
			"check its device plugins, or lower the pod's device and exclusive-CPU requests" + cleanup
	}
	return "read the kubelet's reason and fix the pod template or the node" + cleanup
}
