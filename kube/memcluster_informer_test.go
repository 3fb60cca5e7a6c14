package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// A client-go shared informer syncs through a watch-list stream (no LIST
// request) and then sees every change.
func TestMemclusterInformer(t *testing.T) {
	c, cfg, rec := newMemcluster(t, memcluster.Config{Seed: 1})
	ctx := t.Context()
	if _, err := c.Deployments("ns").Create(ctx, webDeployment(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 10)
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Apps().V1().Deployments().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { events <- "add " + o.(*appsv1.Deployment).Name },
		UpdateFunc: func(_, o any) {
			d := o.(*appsv1.Deployment)
			events <- fmt.Sprintf("update %s replicas=%d", d.Name, *d.Spec.Replicas)
		},
		DeleteFunc: func(o any) { events <- fmt.Sprintf("delete %s", o.(*appsv1.Deployment).Name) },
	}); err != nil {
		t.Fatal(err)
	}
	ictx, stop := context.WithCancel(ctx)
	defer f.Shutdown() // after stop
	defer stop()
	f.Start(ictx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if _, err := cs.AppsV1().Deployments("ns").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.AppsV1().Deployments("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, <-events)
	}
	if diff := cmp.Diff([]string{"add web", "update web replicas=3", "delete web"}, got); diff != "" {
		t.Errorf("informer events mismatch (-want +got):\n%s", diff)
	}
	var lists, watchLists int
	for _, r := range rec.requests() {
		if r.path != "/apis/apps/v1/deployments" {
			continue
		}
		switch {
		case strings.Contains(r.query, "sendInitialEvents=true"):
			watchLists++
		case !strings.Contains(r.query, "watch="):
			lists++
		}
	}
	if watchLists == 0 || lists != 0 {
		t.Errorf("%d watch-list and %d list requests; want the informer to sync by watch-list alone", watchLists, lists)
	}
}

// Injected faults reach client-go as the errors kube-apiserver returns;
// a 429 carries its Retry-After.
func TestMemclusterFaults(t *testing.T) {
	c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c.SetFaults(memcluster.Faults{Rules: []memcluster.FaultRule{
		{Verb: "create", Resource: "deployments", Rate: 1, Reason: metav1.StatusReasonInternalError},
		{Verb: "list", Resource: "deployments", Rate: 1, Reason: metav1.StatusReasonTooManyRequests},
	}})
	_, err = cs.AppsV1().Deployments("ns").Create(ctx, webDeployment(), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) {
		t.Errorf("Create() error = %v; want an internal error", err)
	}
	// client-go retries a 429 after its Retry-After: ask once, to see it.
	err = cs.AppsV1().RESTClient().Get().Namespace("ns").Resource("deployments").MaxRetries(0).Do(ctx).Error()
	if delay, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTooManyRequests(err) || !ok || delay != 1 {
		t.Errorf("List() error = %v (delay %d, %t); want 429 with a delay of 1 s", err, delay, ok)
	}
}
