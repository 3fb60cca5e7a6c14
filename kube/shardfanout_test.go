package kube

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func fanPod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%4), Name: fmt.Sprintf("p-%d", i)}}
}

// TestFanoutLog checks the fan-out's event log: bounded, a watch from a
// version it still holds gets the events after it (of its namespaces, in
// order), one from a version it dropped is told the version expired.
func TestFanoutLog(t *testing.T) {
	f := &fanout[*corev1.Pod]{first: 1, subs: map[*fanSub[*corev1.Pod]]bool{}}
	n := 5*fanLog + 17
	for i := 1; i <= n; i++ {
		f.publish(watch.Added, fanPod(i))
		if len(f.log) > 2*fanLog {
			t.Fatalf("after %d events the log holds %d; want at most %d", i, len(f.log), 2*fanLog)
		}
	}
	if len(f.log) < fanLog || f.log[len(f.log)-1].seq != uint64(n) || f.first != f.log[0].seq {
		t.Fatalf("log of %d events, first %d, last %d; want at least %d, ending at %d", len(f.log), f.first, f.log[len(f.log)-1].seq, fanLog, n)
	}
	lw := f.source(func(ns string) bool { return ns == "ns-1" })
	from := n - fanLog + 1
	w, err := lw.Watch(context.Background(), strconv.Itoa(from))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := from + 1; i <= n; i++ {
		if i%4 != 1 {
			continue
		}
		ev := <-w.ResultChan()
		if p := ev.Object.(*corev1.Pod); p.Name != fmt.Sprintf("p-%d", i) {
			t.Fatalf("event %s; want p-%d", p.Name, i)
		}
	}
	if _, err := lw.Watch(context.Background(), strconv.FormatUint(f.first-2, 10)); !apierrors.IsResourceExpired(err) {
		t.Errorf("a watch from before the log: %v; want ResourceExpired", err)
	}
}

// BenchmarkFanoutPublish is the cost of one event through a fan-out with
// one subscriber, once its log is full.
func BenchmarkFanoutPublish(b *testing.B) {
	f := &fanout[*corev1.Pod]{first: 1, subs: map[*fanSub[*corev1.Pod]]bool{}}
	pods := make([]*corev1.Pod, 1024)
	for i := range pods {
		pods[i] = fanPod(i)
	}
	for i := range 2 * fanLog {
		f.publish(watch.Modified, pods[i%len(pods)])
	}
	b.ResetTimer()
	for i := range b.N {
		f.publish(watch.Modified, pods[i%len(pods)])
	}
}
