package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"

	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podLine summarises a pod as the kubelet leaves it.
func podLine(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	p, err := c.Pods("ns").Get(ctxT(t), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "gone"
	}
	if err != nil {
		t.Fatal(err)
	}
	ready, since := "notready", ""
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			ready, since = "ready", "@"+cond.LastTransitionTime.Sub(t0).String()
		}
	}
	state, restarts := "", int32(0)
	if len(p.Status.ContainerStatuses) > 0 {
		cs := p.Status.ContainerStatuses[0]
		restarts = cs.RestartCount
		switch {
		case cs.State.Waiting != nil:
			state = cs.State.Waiting.Reason
		case cs.State.Running != nil:
			state = "running"
		}
	}
	del := ""
	if p.DeletionTimestamp != nil {
		del = " deleting"
	}
	return line(p.Spec.NodeName, p.Status.Phase, state, restarts, ready+since) + del
}

func TestKubeletLifecycle(t *testing.T) {
	tests := []struct {
		name     string
		behavior PodBehavior
		annotate PodFailure
		steps    []time.Duration // clock steps, each followed by Sync
		want     []string        // pod after the initial Sync and each step
	}{
		{
			name:     "healthy",
			behavior: PodBehavior{StartDelay: 2 * time.Second, ReadyDelay: 3 * time.Second},
			steps:    []time.Duration{2 * time.Second, 2 * time.Second, time.Second},
			want: []string{
				"node-0 Pending ContainerCreating 0 notready",
				"node-0 Running running 0 notready",
				"node-0 Running running 0 notready",
				"node-0 Running running 0 ready@5s",
			},
		},
		{
			name:     "crash loop",
			behavior: PodBehavior{StartDelay: time.Second, Failure: PodCrashLoop, CrashAfter: 5 * time.Second},
			steps:    []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 5 * time.Second, 5 * time.Second},
			want: []string{
				"node-0 Pending ContainerCreating 0 notready",
				"node-0 Running running 0 notready",          // t=1s
				"node-0 Running CrashLoopBackOff 1 notready", // t=6s: crashed, back-off 10s
				"node-0 Running running 1 notready",          // t=16s: restarted
				"node-0 Running CrashLoopBackOff 2 notready", // t=21s: back-off 20s
				"node-0 Running CrashLoopBackOff 2 notready", // t=26s
			},
		},
		{
			name:     "bad image by annotation",
			behavior: PodBehavior{StartDelay: time.Second},
			annotate: PodBadImage,
			steps:    []time.Duration{time.Hour},
			want:     []string{"node-0 Pending ImagePullBackOff 0 notready", "node-0 Pending ImagePullBackOff 0 notready"},
		},
		{
			name:     "never ready",
			behavior: PodBehavior{Failure: PodNeverReady},
			steps:    []time.Duration{time.Hour},
			want:     []string{"node-0 Running running 0 notready", "node-0 Running running 0 notready"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := newTestCluster(t)
			k := NewKubelet(c, KubeletConfig{Model: FixedModel(tt.behavior)})
			p := pod("p", "", "")
			if tt.annotate != "" {
				p.Annotations = map[string]string{FailureAnnotation: string(tt.annotate)}
			}
			must(c.Pods("ns").Create(ctxT(t), p, metav1.CreateOptions{}))(t)
			k.Sync()
			got := []string{podLine(t, c, "p")}
			for _, d := range tt.steps {
				fc.Step(d)
				k.Sync()
				got = append(got, podLine(t, c, "p"))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pod over time mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeletTermination(t *testing.T) {
	tests := []struct {
		name     string
		shutdown time.Duration
		want     []string // after delete, +9s, +10s, +30s
	}{
		{name: "lingers for the grace period", want: []string{"deleting", "deleting", "deleting", "gone"}},
		{name: "model shuts down sooner", shutdown: 10 * time.Second, want: []string{"deleting", "deleting", "gone", "gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fc := newTestCluster(t)
			k := NewKubelet(c, KubeletConfig{Model: FixedModel(PodBehavior{ShutdownDelay: tt.shutdown})})
			must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
			k.Sync()
			if err := c.Pods("ns").Delete(ctxT(t), "p", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range []time.Duration{0, 9 * time.Second, time.Second, 20 * time.Second} {
				fc.Step(d)
				k.Sync()
				s := podLine(t, c, "p")
				if s != "gone" {
					s = "deleting"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("termination mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeletRoundRobinAndRandomModel(t *testing.T) {
	run := func() []string {
		c, fc := newTestCluster(t)
		k := NewKubelet(c, KubeletConfig{Nodes: 2, Model: RandomModel(PodBehavior{}, time.Second, 10*time.Second)})
		for _, n := range []string{"a", "b", "c"} {
			must(c.Pods("ns").Create(ctxT(t), pod(n, "", ""), metav1.CreateOptions{}))(t)
		}
		for k.Sync(); ; k.Sync() {
			next, ok := fc.NextDeadline()
			if !ok {
				break
			}
			fc.SetTime(next)
		}
		return []string{podLine(t, c, "a"), podLine(t, c, "b"), podLine(t, c, "c")}
	}
	first, second := run(), run()
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("same seed, different pods (-first +second):\n%s", diff)
	}
	if first[0][:6] != "node-0" || first[1][:6] != "node-1" || first[2][:6] != "node-0" {
		t.Errorf("nodes not round-robin: %q", first)
	}
}

func TestRunUntilKubeletReady(t *testing.T) {
	c, fc := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Model: FixedModel(PodBehavior{StartDelay: 30 * time.Second, ReadyDelay: time.Hour})})
	ctx, cancel := context.WithCancel(ctxT(t))
	var wg sync.WaitGroup
	wg.Go(func() { k.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	for _, n := range []string{"a", "b"} {
		must(c.Pods("ns").Create(ctxT(t), pod(n, "", ""), metav1.CreateOptions{}))(t)
	}
	allReady := func() bool {
		return podLine(t, c, "a") == "node-0 Running running 0 ready@1h0m30s" && podLine(t, c, "b") == "node-1 Running running 0 ready@1h0m30s"
	}
	if err := c.RunUntil(ctx, allReady, 2*time.Hour); err != nil {
		t.Fatalf("RunUntil() = %v; pods: %q %q", err, podLine(t, c, "a"), podLine(t, c, "b"))
	}
	if got := fc.Now().Sub(t0); got != time.Hour+30*time.Second {
		t.Errorf("virtual time at the end = %v; want 1h0m30s", got)
	}
	if err := c.RunUntil(ctx, func() bool { return false }, time.Hour); !errors.Is(err, clock.ErrStalled) {
		t.Errorf("RunUntil(never) = %v; want ErrStalled", err)
	}
	if err := New(Config{}).RunUntil(ctx, allReady, time.Hour); !errors.Is(err, ErrNotFake) {
		t.Errorf("RunUntil() on the real clock = %v; want ErrNotFake", err)
	}
}

// generations lists a pod's generation, its status's observedGeneration
// and its conditions'.
func generations(p *corev1.Pod) []int64 {
	out := []int64{p.Generation, p.Status.ObservedGeneration}
	for _, c := range p.Status.Conditions {
		out = append(out, c.ObservedGeneration)
	}
	return out
}

func TestPodObservedGeneration(t *testing.T) {
	c, fc := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Model: FixedModel(PodBehavior{})})
	ctx := ctxT(t)
	p := must(c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}))(t)
	if p.Generation != 1 || p.Status.ObservedGeneration != 0 {
		t.Errorf("new pod: generation %d, observed %d; want 1 and 0", p.Generation, p.Status.ObservedGeneration)
	}
	k.Sync()
	p = must(c.Pods("ns").Get(ctx, "p", metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]int64{1, 1, 1, 1, 1, 1}, generations(p)); diff != "" {
		t.Errorf("generations after the kubelet (-want +got):\n%s", diff)
	}
	// A spec change bumps the generation; the kubelet observes it.
	p.Spec.ActiveDeadlineSeconds = ptrTo[int64](600)
	p = must(c.Pods("ns").Update(ctx, p, metav1.UpdateOptions{}))(t)
	if p.Generation != 2 {
		t.Errorf("generation after a spec change = %d; want 2", p.Generation)
	}
	fc.Step(time.Second)
	k.Sync()
	p = must(c.Pods("ns").Get(ctx, "p", metav1.GetOptions{}))(t)
	if diff := cmp.Diff([]int64{2, 2, 2, 2, 2, 2}, generations(p)); diff != "" {
		t.Errorf("generations after the change (-want +got):\n%s", diff)
	}
	// A status write that leaves them out keeps them.
	p.Status.ObservedGeneration = 0
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].ObservedGeneration = 0
	}
	p.Status.Message = "hi"
	p = must(c.Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}))(t)
	if diff := cmp.Diff([]int64{2, 2, 2, 2, 2, 2}, generations(p)); diff != "" {
		t.Errorf("generations after a status write without them (-want +got):\n%s", diff)
	}
}
