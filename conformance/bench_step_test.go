package conformance

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"

	"github.com/ctrlkit/ctrlkit/deployment"
)

// noWrites makes every write of a fake clientset succeed without storing
// anything (returning the object sent), so that a benchmark's sync does
// the same work on every iteration.
func noWrites(c *fake.Clientset) {
	c.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a := a.(type) {
		case clienttesting.CreateAction:
			if a.GetVerb() == "create" || a.GetVerb() == "update" {
				return true, a.GetObject(), nil
			}
		case clienttesting.PatchAction, clienttesting.DeleteAction:
			return true, nil, nil
		}
		return false, nil, nil
	})
}

// BenchmarkDeploymentRolloutStep syncs a complete Deployment with 10
// ReplicaSets right after a template change: the new ReplicaSet is created
// and the old one scaled down, with events and the status written. Both
// sides write through a fake clientset whose writes store nothing, so each
// iteration does the same work: impl=ctrlkit is Sync + WritePlan, impl=upstream
// is syncDeployment; impl=ctrlkit-sync is the decision alone.
func BenchmarkDeploymentRolloutStep(b *testing.B) {
	d, rss := completeDeployment()
	d = d.DeepCopy()
	d.Spec.Template.Spec.Containers[0].Image = "nginx:next"
	d.Generation = 2
	ctx := quietCtx()
	discard := deployment.EventRecorderFunc(func(runtime.Object, string, string, string) {})
	b.Run("impl=ctrlkit", func(b *testing.B) {
		client := fake.NewSimpleClientset(deployObjects(deployWorld{d: d, rss: rss})...)
		noWrites(client)
		st := deployment.State{Deployment: d, ReplicaSets: rss}
		for b.Loop() {
			p, err := deployment.Sync(st, genNow)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := deployment.WritePlan(ctx, deployClient{client}, discard, p); err != nil {
				b.Fatal(err)
			}
			client.ClearActions()
		}
	})
	b.Run("impl=ctrlkit-sync", func(b *testing.B) {
		st := deployment.State{Deployment: d, ReplicaSets: rss}
		for b.Loop() {
			if _, err := deployment.Sync(st, genNow); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		client := fake.NewSimpleClientset(deployObjects(deployWorld{d: d, rss: rss})...)
		noWrites(client)
		f := informers.NewSharedInformerFactory(client, 0)
		dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
		dc, err := upstreamdeployment.NewDeploymentController(ctx, dInf, rsInf, podInf, client)
		if err != nil {
			b.Fatal(err)
		}
		unexportedField(dc, "eventBroadcaster").Interface().(record.EventBroadcaster).Shutdown()
		unexportedField(dc, "eventRecorder").Set(reflect.ValueOf(record.EventRecorder(&record.FakeRecorder{}))) // nil Events: kept nowhere
		_ = dInf.Informer().GetIndexer().Add(d)
		for _, rs := range rss {
			_ = rsInf.Informer().GetIndexer().Add(rs)
		}
		client.ClearActions()
		if err := upstreamSyncDeployment(dc, ctx, "ns/web"); err != nil {
			b.Fatal(err)
		}
		if n := len(client.Actions()); n < 3 {
			b.Fatalf("upstream made %d requests; want a create, a scale and status writes", n)
		}
		for b.Loop() {
			client.ClearActions()
			if err := upstreamSyncDeployment(dc, ctx, "ns/web"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
