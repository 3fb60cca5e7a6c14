package watchfilter

import (
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := watch.NewFake()
		w := Filter(src, func(ev watch.Event) bool { return ev.Object.(*corev1.Pod).Namespace == "a" })
		go func() {
			for _, ns := range []string{"a", "b", "a"} {
				src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}})
			}
		}()
		for range 2 {
			if ev := <-w.ResultChan(); ev.Object.(*corev1.Pod).Namespace != "a" {
				t.Errorf("got an event of namespace %q", ev.Object.(*corev1.Pod).Namespace)
			}
		}
		// An event nobody reads does not keep the goroutine after Stop.
		go src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}})
		synctest.Wait()
		w.Stop()
		for range w.ResultChan() { // drained and closed
		}
	})
}
