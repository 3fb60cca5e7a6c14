package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// client-go on memcluster inside a testing/synctest bubble, with the
// cluster on the (bubble's) real clock: the in-process transport has no
// socket, so every goroutine of the stack blocks durably when idle;
// synctest.Wait returns once the informer has handled a write, and an hour
// of virtual time passes in no wall time.
func TestMemclusterSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		f := informers.NewSharedInformerFactory(cs, 0)
		defer f.Shutdown() // after stop
		defer stop()
		events := make(chan string, 10)
		inf := f.Apps().V1().Deployments().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { events <- "add " + o.(*appsv1.Deployment).Name },
			UpdateFunc: func(_, o any) {
				events <- fmt.Sprintf("update replicas=%d at +%s", *o.(*appsv1.Deployment).Spec.Replicas, time.Since(start).Round(time.Second))
			},
		}); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the informer did not sync")
		}
		if _, err := c.Deployments("ns").Create(ctx, webDeployment(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var got []string
		got = append(got, drain(events)...)
		time.Sleep(time.Hour)
		if _, err := cs.AppsV1().Deployments("ns").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got = append(got, drain(events)...)
		if diff := cmp.Diff([]string{"add web", "update replicas=7 at +1h0m0s"}, got); diff != "" {
			t.Errorf("informer events mismatch (-want +got):\n%s", diff)
		}
	})
}

// drain returns what is in events now, without waiting.
func drain(events chan string) []string {
	var out []string
	for {
		select {
		case e := <-events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A watch the cluster drops (an injected fault) ends the HTTP stream; the
// informer watches again from the last version it saw and misses nothing.
func TestMemclusterDroppedWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg, rec := newMemcluster(t, memcluster.Config{Seed: 1})
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		f := informers.NewSharedInformerFactory(cs, 0)
		defer f.Shutdown() // after stop
		defer stop()
		lister := f.Apps().V1().Deployments().Lister()
		inf := f.Apps().V1().Deployments().Informer()
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the informer did not sync")
		}
		if _, err := c.Deployments("ns").Create(ctx, webDeployment(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		watches := len(rec.requests())
		c.SetFaults(memcluster.Faults{WatchDropRate: 1})
		if _, err := c.Deployments("ns").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		c.SetFaults(memcluster.Faults{})
		time.Sleep(time.Minute) // virtual: client-go backs off before it watches again
		synctest.Wait()
		d, err := lister.Deployments("ns").Get("web")
		if err != nil || *d.Spec.Replicas != 4 {
			t.Fatalf("cached web: %v, %v; want 4 replicas", d, err)
		}
		if len(rec.requests()) == watches {
			t.Error("the informer did not watch again after the drop")
		}
	})
}

// client-go's event recorder writes core/v1 Events, and counts a repeated
// one with a strategic merge patch.
func TestMemclusterEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cfg, rec := newMemcluster(t, memcluster.Config{Seed: 1})
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := record.NewBroadcaster(record.WithContext(t.Context()))
		defer b.Shutdown()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		r := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "test"})
		d := webDeployment()
		d.Namespace, d.UID = "ns", "uid-1"
		for range 2 {
			r.Event(d, corev1.EventTypeNormal, "Scaled", "scaled up to 3")
			synctest.Wait()
		}
		evs, err := cs.CoreV1().Events("ns").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, fmt.Sprintf("%s %s/%s %s count=%d", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, e.Count))
		}
		for _, r := range rec.requests() {
			if strings.Contains(r.path, "/events") && r.method != "GET" {
				got = append(got, r.method+" "+r.contentType)
			}
		}
		want := []string{"Scaled Deployment/web scaled up to 3 count=2", "POST application/json", "PATCH application/strategic-merge-patch+json"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events mismatch (-want +got):\n%s", diff)
		}
	})
}
