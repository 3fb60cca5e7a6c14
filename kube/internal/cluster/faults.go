package cluster

import (
	"context"
	"fmt"
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
)

// SchedulerMessage is the PodScheduled message of Unschedulable pods.
const SchedulerMessage = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."

// FaultKubelet plays scheduler and kubelet for the pods of one namespace,
// more faithfully than [Kubelet]: it binds each pod to a node (so that
// deletion is graceful, as with a real kubelet, which it then confirms),
// and gives the pods Fault picks the status a real kubelet or scheduler
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
		for ev := range w.ResultChan() {
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
			case pod.DeletionTimestamp == nil && !seen[pod.UID] && pod.Spec.NodeName == "" && !podReady(pod):
				seen[pod.UID] = true
				now := time.Now()
				k.note(pod, func(t *PodTimes) { t.Seen = now })
				node := fmt.Sprintf("node-%d", nodes%3+1)
				nodes++
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
	err := k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		fmt.Printf("fault kubelet: confirm deletion of %s: %v\n", pod.Name, err)
	}
}

func (k *FaultKubelet) start(ctx context.Context, pod *corev1.Pod, node string, fault Fault) {
	name, uid := pod.Name, pod.UID
	pods := k.Client.CoreV1().Pods(k.Namespace)
	if fault == Unschedulable {
		k.updateStatus(ctx, name, uid, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: SchedulerMessage, LastTransitionTime: metav1.Now()}}
		})
		return
	}
	err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
	if err != nil {
		return // gone already
	}
	bound := metav1.Now()
	due := metav1.NewTime(bound.Add(k.ReadyDelay))
	k.note(pod, func(t *PodTimes) {
		t.Bound = bound.Time
		if fault == Healthy {
			t.ReadyDue = due.Time
		}
	})
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(due.Time)):
	}
	if fault == Healthy {
		now := time.Now()
		k.note(pod, func(t *PodTimes) { t.ReadySent = now })
	}
	k.updateStatus(ctx, name, uid, func(p *corev1.Pod) { setStatus(p, fault, bound, due) })
	if fault == ReadinessFails {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: name + ".", Namespace: k.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: k.Namespace, Name: name, UID: uid, APIVersion: "v1"},
			Reason:         "Unhealthy", Type: corev1.EventTypeWarning, Count: 1,
			Message:        "Readiness probe failed: HTTP probe failed with statuscode: 503",
			Source:         corev1.EventSource{Component: "kubelet", Host: node},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now()}
		if _, err := k.Client.CoreV1().Events(k.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			fmt.Printf("fault kubelet: event for %s: %v\n", name, err)
		}
	}
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
func (k *FaultKubelet) updateStatus(ctx context.Context, name string, uid types.UID, f func(*corev1.Pod)) {
	pods := k.Client.CoreV1().Pods(k.Namespace)
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || pod.UID != uid || pod.DeletionTimestamp != nil {
			return
		}
		f(pod)
		if _, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return
		}
	}
}
