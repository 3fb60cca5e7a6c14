package replicaset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// benchPods returns n pods of rs with a spread of nodes, readiness, costs,
// restarts and ages, so the ranking has work to do.
func benchPods(rs *appsv1.ReplicaSet, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		at := t0.Add(-time.Duration(i*7919%86400) * time.Second)
		opts := []podOpt{ownedBy(rs), onNode(fmt.Sprintf("node-%d", i%50)), createdAt(at), withUID(fmt.Sprintf("%08x", i*2654435761%(1<<32)))}
		if i%10 != 0 {
			opts = append(opts, readySince(at.Add(time.Minute)))
		}
		if i%7 == 0 {
			opts = append(opts, withCost(fmt.Sprint(i%3)))
		}
		if i%13 == 0 {
			opts = append(opts, withRestarts(int32(i%4)))
		}
		pods[i] = newPod(fmt.Sprintf("%s-%05d", rs.Name, i), opts...)
	}
	return pods
}

// BenchmarkManageReplicasDelete chooses 100 of 10,000 pods to delete.
func BenchmarkManageReplicasDelete(b *testing.B) {
	rs := newRS("web", 9900)
	pods := benchPods(rs, 10000)
	in := replicaset.Input{ReplicaSet: rs, Active: pods, Related: pods, ExpectationsSatisfied: true}
	b.ReportAllocs()
	for b.Loop() {
		p, err := replicaset.ManageReplicas(in, t0)
		if err != nil || len(p.Actions) != 1 {
			b.Fatalf("plan = %v", p)
		}
	}
}

// failClient fails the benchmark on any write: a settled ReplicaSet needs
// none.
type failClient struct{ b *testing.B }

func (f failClient) CreatePod(context.Context, *corev1.Pod) (*corev1.Pod, error) {
	f.b.Fatal("unexpected create")
	return nil, nil
}
func (f failClient) DeletePod(context.Context, string, string, types.UID) error {
	f.b.Fatal("unexpected delete")
	return nil
}
func (f failClient) PatchPod(context.Context, string, string, []byte) error {
	f.b.Fatal("unexpected patch")
	return nil
}
func (f failClient) UpdateReplicaSetStatus(context.Context, *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.b.Fatal("unexpected status update")
	return nil, nil
}
func (f failClient) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	f.b.Fatal("unexpected live pod read")
	return nil, nil
}
func (f failClient) GetReplicaSet(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
	f.b.Fatal("unexpected live read")
	return nil, nil
}

// BenchmarkReconcileNoop syncs a settled ReplicaSet whose pods are all
// ready and available, from informer caches: listing the namespace
// (indexed=false), or through a PodCache (indexed=true), where the
// Reconciler remembers what it learnt of each pod object. The variants
// with a PodCache show what that memory saves: remember=false hides the
// PodCache's appending reads, so that every sync learns every pod again;
// changed=1 replaces one pod object in the cache before each sync (a
// kubelet's status update), which that sync learns again.
func BenchmarkReconcileNoop(b *testing.B) {
	type variant struct {
		name            string
		indexed, forget bool
		changePerSync   bool
	}
	variants := []variant{
		{name: "indexed=false"},
		{name: "indexed=true", indexed: true},
		{name: "indexed=true/remember=false", indexed: true, forget: true},
		{name: "indexed=true/changed=1", indexed: true, changePerSync: true},
	}
	for _, n := range []int{10, 1000} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("pods=%d/%s", n, v.name), func(b *testing.B) {
				rs := newRS("web", int32(n))
				n32 := int32(n)
				rs.Status = appsv1.ReplicaSetStatus{
					Replicas: n32, FullyLabeledReplicas: n32, ReadyReplicas: n32, AvailableReplicas: n32,
					ObservedGeneration: 1, TerminatingReplicas: new(int32),
				}
				rsCache := informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{})
				if err := rsCache.Add(rs); err != nil {
					b.Fatal(err)
				}
				podCache := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
				var all []*corev1.Pod
				for i := range n {
					p := newPod(fmt.Sprintf("web-%05d", i), ownedBy(rs), onNode("n1"), readySince(t0.Add(-time.Hour)))
					if err := podCache.Add(p); err != nil {
						b.Fatal(err)
					}
					all = append(all, p)
				}
				var pods reconcile.Lister[*corev1.Pod] = reconcile.ListerFunc[*corev1.Pod](
					func(_ context.Context, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
						return podCache.List(ns, sel)
					})
				if v.indexed {
					pc, err := replicaset.NewPodCache(podCache)
					if err != nil {
						b.Fatal(err)
					}
					pods = pc
					if v.forget {
						pods = unbuffered{pc}
					}
				}
				rss, err := reconcile.FromCache(rsCache)
				if err != nil {
					b.Fatal(err)
				}
				r, err := replicaset.NewReconciler(replicaset.ReconcilerConfig{
					ReplicaSets: rss, Pods: pods, Client: failClient{b}, Clock: newWorld(t0).clock,
				})
				if err != nil {
					b.Fatal(err)
				}
				// Two versions of every pod, to replace one per sync.
				versions := [2][]*corev1.Pod{all, make([]*corev1.Pod, n)}
				for i, p := range all {
					versions[1][i] = p.DeepCopy()
				}
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if v.changePerSync {
						if err := podCache.Add(versions[i/n%2][i%n]); err != nil {
							b.Fatal(err)
						}
						i++
					}
					if res, err := r.Reconcile(ctx, key("web")); err != nil || res.RequeueAfter != 0 {
						b.Fatalf("Reconcile = %+v, %v", res, err)
					}
				}
			})
		}
	}
}
