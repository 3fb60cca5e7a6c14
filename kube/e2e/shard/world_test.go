//go:build e2e

package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/kube/simkubelet"
)

// world is the workload: Deployments in test namespaces, a kubelet.
type world struct {
	t     *testing.T
	ctx   context.Context
	cs    kubernetes.Interface
	ns    []string
	deps  int
	scale int32
}

func newWorld(t *testing.T, ctx context.Context, cs kubernetes.Interface, namespaces, perNamespace int) *world {
	w := &world{t: t, ctx: ctx, cs: cs, deps: namespaces * perNamespace, scale: 3}
	for i := range namespaces {
		ns := fmt.Sprintf("team-%02d", i)
		w.ns = append(w.ns, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k := &simkubelet.Kubelet{Client: cs, ReadyDelay: 100 * time.Millisecond}
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Run(kctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *world) create(image string) {
	for i, ns := range w.ns {
		for j := range w.deps / len(w.ns) {
			name := fmt.Sprintf("web-%d", j)
			l := map[string]string{"app": name}
			grace := int64(0)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: appsv1.DeploymentSpec{Replicas: &w.scale, Selector: &metav1.LabelSelector{MatchLabels: l},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
						Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{Name: "app", Image: image}}}}}}
			if _, err := w.cs.AppsV1().Deployments(ns).Create(w.ctx, d, metav1.CreateOptions{}); err != nil {
				w.t.Fatalf("namespace %d: %v", i, err)
			}
		}
	}
}

func (w *world) rollout(image string) {
	for _, ns := range w.ns {
		for j := range w.deps / len(w.ns) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d, err := w.cs.AppsV1().Deployments(ns).Get(w.ctx, fmt.Sprintf("web-%d", j), metav1.GetOptions{})
				if err != nil {
					return err
				}
				d.Spec.Template.Spec.Containers[0].Image = image
				_, err = w.cs.AppsV1().Deployments(ns).Update(w.ctx, d, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// converged reports whether every Deployment runs image: status complete,
// and exactly scale live pods, all of image (none lost, none extra).
func (w *world) converged(image string) (bool, string) {
	for _, ns := range w.ns {
		ds, err := w.cs.AppsV1().Deployments(ns).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := w.cs.CoreV1().Pods(ns).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, d := range ds.Items {
			s := d.Status
			if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != w.scale || s.AvailableReplicas != w.scale || s.Replicas != w.scale {
				return false, fmt.Sprintf("%s/%s: %+v", ns, d.Name, s)
			}
			n := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || p.Labels["app"] != d.Name {
					continue
				}
				if p.Spec.Containers[0].Image != image {
					return false, fmt.Sprintf("%s/%s runs %s", ns, p.Name, p.Spec.Containers[0].Image)
				}
				n++
			}
			if n != int(w.scale) {
				return false, fmt.Sprintf("%s/%s has %d pods", ns, d.Name, n)
			}
		}
	}
	return true, ""
}

func (w *world) waitConverged(image string, timeout time.Duration) time.Duration {
	w.t.Helper()
	var why string
	start := time.Now()
	for {
		ok, reason := w.converged(image)
		if ok {
			return time.Since(start)
		}
		why = reason
		if time.Since(start) > timeout {
			w.t.Fatalf("not rolled out to %s after %v: %s", image, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCheck checks the replicas' writes, from their proxies' logs: each
// within a tenure of its writer in the assignment, and, per namespace, no
// two replicas' stretches of writes overlapping in time.
func writeCheck(t *testing.T, tl *timeline, rs []*replica) (writes int, problems []string) {
	type w struct {
		replica    string
		start, end time.Time
		what       string
	}
	byNS := map[string][]w{}
	for _, r := range rs {
		for _, q := range r.proxy.Requests() {
			if !q.Request.IsWrite() || q.Code == 0 {
				continue
			}
			res := strings.Split(q.Request.Resource, "/")[0]
			if res != "deployments" && res != "replicasets" && res != "pods" {
				continue
			}
			ns := pathNamespace(q.Path)
			byNS[ns] = append(byNS[ns], w{r.name, q.Start, q.End, q.Request.String() + " " + q.Path})
			writes++
			a, ok := tl.last()
			if !ok {
				problems = append(problems, "no assignment seen")
				continue
			}
			i := rangeOf(a, ns)
			// The test sees the record through a watch: allow a second.
			if owners := tl.ownersBetween(i, q.Start.Add(-time.Second), q.End.Add(time.Second)); !slices.Contains(owners, r.name) {
				problems = append(problems, fmt.Sprintf("%s by %s at %s while range %d was %v's", q.Request, r.name, q.Start.Format("15:04:05.000"), i, owners))
			}
		}
	}
	for ns, ws := range byNS {
		slices.SortFunc(ws, func(a, b w) int { return a.start.Compare(b.start) })
		// Stretches: runs of one replica's writes; each must have ended
		// before the next one starts.
		prev, curEnd := "", time.Time{}
		for _, x := range ws {
			if x.replica != prev {
				if prev != "" && x.start.Before(curEnd) {
					problems = append(problems, fmt.Sprintf("%s: %s wrote at %s while %s's writes ran until %s (%s)", ns, x.replica, x.start.Format("15:04:05.000"), prev, curEnd.Format("15:04:05.000"), x.what))
				}
				prev, curEnd = x.replica, x.end
				continue
			}
			if x.end.After(curEnd) {
				curEnd = x.end
			}
		}
	}
	slices.Sort(problems)
	return writes, problems
}

func pathNamespace(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}

// countEvents counts the watch events of Deployments, ReplicaSets and
// pods in every namespace until stop.
func countEvents(ctx context.Context, t *testing.T, cs kubernetes.Interface) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	// From the current version: no initial events.
	rv := func(l interface{ GetResourceVersion() string }, err error) metav1.ListOptions {
		if err != nil {
			t.Fatal(err)
		}
		return metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}
	}
	d := rv(cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1}))
	r := rv(cs.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{Limit: 1}))
	p := rv(cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}))
	for _, open := range []func() (watch.Interface, error){
		func() (watch.Interface, error) { return cs.AppsV1().Deployments("").Watch(ctx, d) },
		func() (watch.Interface, error) { return cs.AppsV1().ReplicaSets("").Watch(ctx, r) },
		func() (watch.Interface, error) { return cs.CoreV1().Pods("").Watch(ctx, p) },
	} {
		w, err := open()
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	return func() int {
		cancel()
		wg.Wait()
		return n
	}
}
