package simkubelet

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Fault is how a pod misbehaves under a [FaultKubelet], as a real kubelet
// and scheduler would report it.
type Fault string

// The faults, with what the pod's status shows.
const (
	Healthy Fault = ""
	// ImagePull: Pending, container waiting ImagePullBackOff.
	ImagePull Fault = "ImagePull"
	// InvalidImage: Pending, container waiting InvalidImageName.
	InvalidImage Fault = "InvalidImage"
	// CrashLoop: Running, container waiting CrashLoopBackOff, 3 restarts,
	// last exit code 1.
	CrashLoop Fault = "CrashLoop"
	// OOMKilled: as CrashLoop, last exit 137 (OOMKilled).
	OOMKilled Fault = "OOMKilled"
	// InitCrashLoop: Pending, the init container in CrashLoopBackOff.
	InitCrashLoop Fault = "InitCrashLoop"
	// ConfigError: Pending, container waiting CreateContainerConfigError.
	ConfigError Fault = "ConfigError"
	// Unschedulable: never bound; PodScheduled=False/Unschedulable with
	// the scheduler's message.
	Unschedulable Fault = "Unschedulable"
	// ReadinessFails: Running, not Ready, and an Unhealthy event
	// "Readiness probe failed" as the kubelet records it.
	ReadinessFails Fault = "ReadinessFails"
	// PrivateImage: the image's registry wants credentials. The pull
	// works when the pod names imagePullSecrets and all of them exist;
	// otherwise the pod stays Pending, its container waiting
	// ImagePullBackOff with the registry's refusal. (A missing secret is
	// also reported, for any pod, with the kubelet's
	// FailedToRetrieveImagePullSecret event.)
	PrivateImage Fault = "PrivateImage"
)

// The kubelet's admission rejections: the pod is bound, then the kubelet
// refuses to run it and marks it Failed with the reason and the message
// "Pod was rejected: …", and records a Warning event with the same
// reason (pkg/kubelet's rejectPod). The ReplicaSet controller does not
// count a Failed pod, so it creates a replacement.
const (
	// OutOfCPU: the node has no CPU left for the pod's requests.
	OutOfCPU Fault = "OutOfcpu"
	// OutOfMemory: the node has no memory left for the pod's requests.
	OutOfMemory Fault = "OutOfmemory"
	// NodeAffinity: the node does not match the pod's node selector or
	// affinity (a pod bound without the scheduler, or relabelled node).
	NodeAffinity Fault = "NodeAffinity"
	// UnexpectedAdmissionError: a resource manager failed to allocate a
	// device for the pod.
	UnexpectedAdmissionError Fault = "UnexpectedAdmissionError"
)

// Faults lists every fault, for command lines.
var Faults = []Fault{ImagePull, InvalidImage, CrashLoop, OOMKilled, InitCrashLoop, ConfigError, Unschedulable, ReadinessFails,
	PrivateImage, OutOfCPU, OutOfMemory, NodeAffinity, UnexpectedAdmissionError}

// ParseFault returns the fault named s ("" or "Healthy" is Healthy).
func ParseFault(s string) (Fault, error) {
	if s == "" || s == "Healthy" {
		return Healthy, nil
	}
	for _, f := range Faults {
		if strings.EqualFold(string(f), s) {
			return f, nil
		}
	}
	names := make([]string, len(Faults))
	for i, f := range Faults {
		names[i] = string(f)
	}
	return "", fmt.Errorf("simkubelet: unknown fault %q (one of Healthy, %s)", s, strings.Join(names, ", "))
}

// rejected reports whether f is a kubelet admission rejection.
func (f Fault) rejected() bool {
	switch f {
	case OutOfCPU, OutOfMemory, NodeAffinity, UnexpectedAdmissionError:
		return true
	}
	return false
}

// Node capacity the rejection messages quote: the node is full.
const (
	nodeCPUMilli   = 4000
	nodeMemoryByte = 8 << 30
)

// rejection is the message the kubelet's admission gives for f.
func rejection(f Fault, p *corev1.Pod) string {
	var cpu, mem int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	switch f {
	case OutOfCPU:
		return fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", cpu, nodeCPUMilli, nodeCPUMilli)
	case OutOfMemory:
		return fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", mem, nodeMemoryByte, nodeMemoryByte)
	case NodeAffinity:
		return "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	}
	return "Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 1, Available: 0, which is unexpected"
}

// SchedulerMessage is the PodScheduled message of Unschedulable pods.
const SchedulerMessage = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."

// FaultKubelet plays scheduler and kubelet for the pods of one namespace
// (every namespace if Namespace is ""), more faithfully than [Kubelet]:
// it binds each pod to a node (one of node-1…node-3; a pod whose
// template sets spec.nodeName keeps it), so that
// deletion is graceful, as with a real kubelet, which it then confirms;
// and it gives the pods Fault picks the status a real kubelet or scheduler
// would write for that fault. Healthy pods get a start time when bound
// and are Ready ReadyDelay later: the conditions' lastTransitionTime is
// that scheduled time, however late the status write lands (as a real
// kubelet stamps the time its probe saw the change, not the time the API
// got it). [FaultKubelet.Times] tells both apart.
type FaultKubelet struct {
	Client    kubernetes.Interface
	Namespace string
	// ReadyDelay is the time from binding to Ready (or to the fault).
	ReadyDelay time.Duration
	// Fault picks each new pod's fault (nil: all healthy).
	Fault func(*corev1.Pod) Fault
	// Logf, if set, receives a line for what the kubelet does to each pod
	// and for the writes that fail.
	Logf func(format string, args ...any)

	mu    sync.Mutex
	times map[types.UID]*PodTimes
}

// PodTimes is what a [FaultKubelet] did to one pod and when, on the
// test's own clock (the API's timestamps have one-second resolution).
// Zero times are things that did not happen.
type PodTimes struct {
	Name string
	// Owner is the name of the pod's controller (its ReplicaSet).
	Owner string
	// Seen is when the kubelet saw the new pod; Bound when its binding
	// was written.
	Seen, Bound time.Time
	// ReadyDue is Bound + ReadyDelay, when the pod turned Ready (healthy
	// pods only); ReadySent when the kubelet started writing that status.
	ReadyDue, ReadySent time.Time
	// Deleting is when the kubelet saw the pod's deletion; Gone when it
	// started the final delete (the containers stopped at once).
	Deleting, Gone time.Time
}

// Times returns the timeline of every pod the kubelet has seen.
func (k *FaultKubelet) Times() []PodTimes {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]PodTimes, 0, len(k.times))
	for _, t := range k.times {
		out = append(out, *t)
	}
	return out
}

// note records f's change to the timeline of the pod uid.
func (k *FaultKubelet) note(pod *corev1.Pod, f func(*PodTimes)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.times == nil {
		k.times = map[types.UID]*PodTimes{}
	}
	t := k.times[pod.UID]
	if t == nil {
		t = &PodTimes{Name: pod.Name}
		if ref := metav1.GetControllerOf(pod); ref != nil {
			t.Owner = ref.Name
		}
		k.times[pod.UID] = t
	}
	f(t)
}

// Run watches pods until ctx is done, then waits for its status writes.
func (k *FaultKubelet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	seen := map[types.UID]bool{}
	deleted := map[types.UID]bool{}
	rv := ""
	nodes := 0
	for ctx.Err() == nil {
		w, err := k.Client.CoreV1().Pods(k.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range watchEvents(ctx, w) {
			if ev.Type == watch.Error {
				rv = ""
				break
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			switch {
			case ev.Type == watch.Deleted || ev.Type == watch.Bookmark:
			case pod.DeletionTimestamp != nil && pod.Spec.NodeName != "" && !deleted[pod.UID]:
				deleted[pod.UID] = true
				now := time.Now()
				k.note(pod, func(t *PodTimes) { t.Deleting = now })
				wg.Go(func() { k.confirmDeletion(ctx, pod) })
			case pod.DeletionTimestamp == nil && !seen[pod.UID] && !podReady(pod) &&
				pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded:
				seen[pod.UID] = true
				now := time.Now()
				k.note(pod, func(t *PodTimes) { t.Seen = now })
				node := pod.Spec.NodeName // set in its template: no scheduling
				if node == "" {
					node = fmt.Sprintf("node-%d", nodes%3+1)
					nodes++
				}
				fault := Healthy
				if k.Fault != nil {
					fault = k.Fault(pod)
				}
				wg.Go(func() { k.start(ctx, pod, node, fault) })
			}
		}
		w.Stop()
	}
	return nil
}

// confirmDeletion is the kubelet having stopped the containers: a delete
// with grace period 0 (finalizers, if any, still hold the object).
func (k *FaultKubelet) confirmDeletion(ctx context.Context, pod *corev1.Pod) {
	uid := pod.UID
	now := time.Now()
	k.note(pod, func(t *PodTimes) { t.Gone = now })
	err := k.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		k.logf("pod %s/%s: confirming its deletion: %v", pod.Namespace, pod.Name, err)
		return
	}
	k.logf("pod %s/%s: stopped", pod.Namespace, pod.Name)
}

func (k *FaultKubelet) logf(format string, args ...any) {
	if k.Logf != nil {
		k.Logf(format, args...)
	}
}

// event records a Warning event about pod as the kubelet on node does.
func (k *FaultKubelet) event(ctx context.Context, pod *corev1.Pod, node, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1"},
		Reason:         reason, Type: corev1.EventTypeWarning, Count: 1, Message: msg,
		Source:         corev1.EventSource{Component: "kubelet", Host: node},
		FirstTimestamp: now, LastTimestamp: now, ReportingController: "kubelet", ReportingInstance: node}
	if _, err := k.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		k.logf("pod %s/%s: event %s: %v", pod.Namespace, pod.Name, reason, err)
	}
}

// missingPullSecrets returns the imagePullSecrets of pod that do not
// exist, and whether the pod names any.
func (k *FaultKubelet) missingPullSecrets(ctx context.Context, pod *corev1.Pod) (missing []string, named bool) {
	for _, ref := range pod.Spec.ImagePullSecrets {
		named = true
		if _, err := k.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			missing = append(missing, ref.Name)
		}
	}
	return missing, named
}

func (k *FaultKubelet) start(ctx context.Context, pod *corev1.Pod, node string, fault Fault) {
	name, uid := pod.Name, pod.UID
	if fault == Unschedulable {
		k.updateStatus(ctx, pod, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: SchedulerMessage, LastTransitionTime: metav1.Now()}}
		})
		k.logf("pod %s/%s: unschedulable", pod.Namespace, name)
		return
	}
	if pod.Spec.NodeName == "" {
		err := k.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		if err != nil {
			return // gone already
		}
	}
	bound := metav1.Now()
	due := metav1.NewTime(bound.Add(k.ReadyDelay))
	k.note(pod, func(t *PodTimes) {
		t.Bound = bound.Time
		if fault == Healthy {
			t.ReadyDue = due.Time
		}
	})
	if fault.rejected() {
		// The kubelet's admission runs as soon as the pod reaches it.
		msg := rejection(fault, pod)
		k.event(ctx, pod, node, string(fault), msg)
		k.updateStatus(ctx, pod, func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: string(fault), Message: "Pod was rejected: " + msg, QOSClass: p.Status.QOSClass}
		})
		k.logf("pod %s/%s: rejected on %s: %s", pod.Namespace, name, node, fault)
		return
	}
	if missing, named := k.missingPullSecrets(ctx, pod); len(missing) > 0 || (fault == PrivateImage && !named) {
		if len(missing) > 0 {
			k.event(ctx, pod, node, "FailedToRetrieveImagePullSecret", fmt.Sprintf(
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
		}
	} else if fault == PrivateImage {
		fault = Healthy // the credentials are there
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(due.Time)):
	}
	if fault == Healthy {
		now := time.Now()
		k.note(pod, func(t *PodTimes) { t.ReadySent = now })
	}
	k.updateStatus(ctx, pod, func(p *corev1.Pod) { setStatus(p, fault, bound, due) })
	if fault == ReadinessFails {
		k.event(ctx, pod, node, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	}
	k.logf("pod %s/%s: on %s, %s", pod.Namespace, name, node, cmp.Or(string(fault), "Ready"))
}

// setStatus writes what the kubelet reports for a pod with fault, which
// showed at now.
func setStatus(p *corev1.Pod, fault Fault, started, now metav1.Time) {
	c := p.Spec.Containers[0]
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	p.Status.StartTime = &started
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, fault != InitCrashLoop),
		cond(corev1.ContainersReady, fault == Healthy), cond(corev1.PodReady, fault == Healthy)}
	crash := func(code int32, reason string) {
		cs.RestartCount = 3
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 40s restarting failed container=%s pod=%s", c.Name, p.Name)}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now}
	}
	switch fault {
	case Healthy, ReadinessFails:
		cs.Ready, cs.Started = fault == Healthy, new(true)
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
	case ImagePull:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.Image)}
	case PrivateImage:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf(
			"Back-off pulling image %q: ErrImagePull: failed to pull and unpack image %q: failed to resolve reference %q: "+
				"pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials", c.Image, c.Image, c.Image)}
	case InvalidImage:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "InvalidImageName", Message: fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", c.Image, c.Image)}
	case CrashLoop:
		crash(1, "Error")
	case OOMKilled:
		crash(137, "OOMKilled")
	case ConfigError:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `configmap "app-config" not found`}
	case InitCrashLoop:
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		init := corev1.ContainerStatus{Name: "init", Image: c.Image, RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=init"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{init}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
}

// updateStatus applies f to the pod's status, retrying on Conflict, as
// long as it is the same pod and not being deleted.
func (k *FaultKubelet) updateStatus(ctx context.Context, p *corev1.Pod, f func(*corev1.Pod)) {
	pods := k.Client.CoreV1().Pods(p.Namespace)
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		pod, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || pod.UID != p.UID || pod.DeletionTimestamp != nil {
			return
		}
		f(pod)
		if _, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			if err != nil && ctx.Err() == nil {
				k.logf("pod %s/%s: status: %v", p.Namespace, p.Name, err)
			}
			return
		}
	}
}
