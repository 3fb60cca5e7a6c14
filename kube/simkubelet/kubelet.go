package simkubelet

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Kubelet plays the kubelet for the pods of one namespace (every
// namespace if Namespace is ""): there is no scheduler and no node, so it
// marks each new pod Running and Ready (through the status subresource,
// retrying on Conflict) after ReadyDelay.
type Kubelet struct {
	Client    kubernetes.Interface
	Namespace string
	// ReadyDelay is how long a pod stays Pending before it is Ready.
	ReadyDelay time.Duration
	// NeverReady, if set, picks pods that stay Pending forever (a broken
	// image, say).
	NeverReady func(*corev1.Pod) bool
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
		for ev := range watchEvents(ctx, w) {
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
			if k.NeverReady != nil && k.NeverReady(pod) {
				continue
			}
			wg.Go(func() { k.makeReady(ctx, pod.Namespace, pod.Name, pod.UID) })
		}
		w.Stop()
	}
	return nil
}

func (k *Kubelet) makeReady(ctx context.Context, ns, name string, uid types.UID) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(k.ReadyDelay):
	}
	pods := k.Client.CoreV1().Pods(ns)
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

// finishDeletion removes pod, already marked for deletion, at once.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	for ctx.Err() == nil {
		err := k.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
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

// watchEvents yields w's events until it ends or ctx is done (a watch that
// does not end with its context, like client-go's fake one, stops too).
func watchEvents(ctx context.Context, w watch.Interface) iter.Seq[watch.Event] {
	return func(yield func(watch.Event) bool) {
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok || !yield(ev) {
					return
				}
			}
		}
	}
}
