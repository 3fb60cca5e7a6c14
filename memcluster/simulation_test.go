package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"

	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A system with nothing left to do is reported at once, with what is not
// settled: no wall-clock wait, no second chance.
func TestRunUntilReportsAStallAtOnce(t *testing.T) {
	c, fc := newTestCluster(t)
	k := NewKubelet(c, KubeletConfig{Model: FixedModel(PodBehavior{StartDelay: time.Second, Failure: PodBadImage})})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	defer func() { cancel(); <-done }()
	must(c.Pods("ns").Create(ctx, pod("p", "", ""), metav1.CreateOptions{}))(t)

	err := c.RunUntil(ctx, func() bool { return false }, time.Hour)
	if !errors.Is(err, clock.ErrStalled) {
		t.Fatalf("RunUntil = %v; want ErrStalled", err)
	}
	if !strings.Contains(err.Error(), "pod ns/p: Pending, app ImagePullBackOff") {
		t.Errorf("stall error does not say why pod p is not ready:\n%v", err)
	}
	if got := fc.Now().Sub(t0); got > 10*time.Minute {
		t.Errorf("stalled at +%v: the kubelet's back-off should not keep time moving", got)
	}
}

// Work that never finishes (here: a watch whose events nobody reads) keeps
// the simulation at its instant; when ctx ends, the error names it.
func TestRunUntilNamesUnfinishedWork(t *testing.T) {
	c, _ := newTestCluster(t)
	w := must(c.Pods("ns").Watch(ctxT(t), metav1.ListOptions{}))(t)
	defer w.Stop()
	must(c.Pods("ns").Create(ctxT(t), pod("p", "", ""), metav1.CreateOptions{}))(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	err := c.RunUntil(ctx, func() bool { return false }, time.Hour)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "memcluster: watch pods ×1") {
		t.Errorf("RunUntil = %v; want context.Canceled naming the unread watch", err)
	}
}
