package kube_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// With EventsAPI "events.k8s.io/v1" the controllers' events of one rollout
// are events.k8s.io/v1 Events with upstream's reasons and messages as
// notes, an action, and the controllers as reporting controllers.
func TestOperatorEventsAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg, _ := newMemcluster(t, memcluster.Config{Seed: 1})
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer stop()
		k := memcluster.NewKubelet(c, memcluster.KubeletConfig{})
		wg.Go(func() { k.Run(ctx) })
		op := &kube.Operator{Config: cfg, Namespace: "ns", EventsAPI: "events.k8s.io/v1"}
		wg.Go(func() {
			if err := op.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		d := webDeployment()
		d.Spec.Replicas = new(int32(2))
		if _, err := c.Deployments("ns").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitComplete(t, c, "nginx:1.27")
		stop()
		wg.Wait()
		synctest.Wait()

		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := cs.EventsV1().Events("ns").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hash := regexp.MustCompile(`web-[a-z0-9]+(-[a-z0-9]+)?`)
		var got []string
		for _, e := range evs.Items {
			got = append(got, fmt.Sprintf("%s %s %s/%s %s action=%s: %s", e.ReportingController, e.Type, e.Regarding.Kind,
				hash.ReplaceAllString(e.Regarding.Name, "web-*"), e.Reason, e.Action, hash.ReplaceAllString(e.Note, "web-*")))
		}
		slices.Sort(got)
		got = slices.Compact(got)
		want := []string{
			"deployment-controller Normal Deployment/web ScalingReplicaSet action=Scale: Scaled up replica set web-* from 0 to 2",
			"replicaset-controller Normal ReplicaSet/web-* SuccessfulCreate action=Create: Created pod: web-*",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events.k8s.io/v1 Events mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestEventAction(t *testing.T) {
	for reason, want := range map[string]string{
		"ScalingReplicaSet": "Scale", "SuccessfulCreate": "Create", "FailedCreate": "Create", "ReplicaSetCreateError": "Create",
		"SuccessfulDelete": "Delete", "FailedDelete": "Delete", "DeploymentRollback": "Rollback", "SelectingAll": "Sync",
	} {
		if got := kube.EventAction(reason); got != want {
			t.Errorf("EventAction(%q) = %q; want %q", reason, got, want)
		}
	}
}
