package cluster

import (
	"context"
	"errors"
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

// Kubelet plays the kubelet for the pods of one namespace: there is no
// scheduler and no node, so it marks each new pod Running and Ready
// (through the status subresource, retrying on Conflict) after ReadyDelay.
type Kubelet struct {
	Client    kubernetes.Interface
	Namespace string
	// ReadyDelay is how long a pod stays Pending before it is Ready.
	ReadyDelay time.Duration
	// NeverReady, if set, picks pods that stay Pending forever (a broken
	// image, say).
	NeverReady func(*corev1.Pod) bool
	// Reject, if set, picks pods the kubelet refuses at admission, with
	// its reason and message (OutOfcpu, "Node didn't have enough
	// resource: ..."): as a real kubelet, it sets them Failed with that
	// reason and "Pod was rejected: " and the message, and records a
	// Warning event on the pod from the kubelet.
	Reject func(*corev1.Pod) (reason, message string, rejected bool)
}

// Run watches pods until ctx is done. It returns once every status update
// it started has finished.
func (k *Kubelet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	seen := make(map[types.UID]bool)
	finishing := make(map[types.UID]bool)
	rv := ""
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
				rv = "" // expired: start over; seen keeps us from repeating work
				break
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			if ev.Type != watch.Deleted && pod.DeletionTimestamp != nil && !finishing[pod.UID] {
				// A deletion the API server left half done (its client
				// went away between marking the pod and removing it):
				// a kubelet finishes it.
				finishing[pod.UID] = true
				wg.Go(func() { k.finishDeletion(ctx, pod) })
				continue
			}
			if ev.Type != watch.Added || seen[pod.UID] || pod.DeletionTimestamp != nil || podReady(pod) {
				continue
			}
			seen[pod.UID] = true
			if k.Reject != nil {
				if reason, message, ok := k.Reject(pod); ok {
					wg.Go(func() { k.reject(ctx, pod, reason, message) })
					continue
				}
			}
			if k.NeverReady != nil && k.NeverReady(pod) {
				continue
			}
			wg.Go(func() { k.makeReady(ctx, pod.Name, pod.UID) })
		}
		w.Stop()
	}
	return nil
}

func (k *Kubelet) makeReady(ctx context.Context, name string, uid types.UID) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(k.ReadyDelay):
	}
	pods := k.Client.CoreV1().Pods(k.Namespace)
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if transient(err) {
			// The API server is unreachable (restarting, say): a real
			// kubelet reports the pod once it is back.
			attempt--
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if err != nil || pod.UID != uid || pod.DeletionTimestamp != nil {
			return // gone, replaced or going
		}
		now := metav1.Now()
		pod.Status.Phase = corev1.PodRunning
		pod.Status.StartTime = &now
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if err == nil || (!apierrors.IsConflict(err) && !transient(err)) {
			return
		}
		if transient(err) { // as above
			attempt--
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// reject refuses pod at admission, as kubelet rejectPod does: a Warning
// event with the reason and message, and the status Failed with them.
func (k *Kubelet) reject(ctx context.Context, pod *corev1.Pod, reason, message string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: message, Type: corev1.EventTypeWarning, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet", Host: "harness-node"},
		FirstTimestamp: now, LastTimestamp: now,
	}
	pods := k.Client.CoreV1().Pods(k.Namespace)
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		if _, err := k.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err == nil || !transient(err) {
			break
		}
	}
	for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp != nil {
			if transient(err) {
				continue
			}
			return
		}
		cur.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
			QOSClass: cur.Status.QOSClass, StartTime: &now}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil || (!apierrors.IsConflict(err) && !transient(err)) {
			return
		}
	}
}

// finishDeletion removes pod, already marked for deletion, at once.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	for ctx.Err() == nil {
		err := k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if !transient(err) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// transient reports whether err says the API server could not be reached
// or could not answer now (a connection refused, 429, 5xx, a timeout).
func transient(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsUnexpectedServerError(err)
}
