package conformance

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
	_ "unsafe" // go:linkname to upstream's unexported sync method

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/controller"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/replicaset"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// Side-by-side benchmarks: each BenchmarkX has /impl=ctrlkit and
// /impl=upstream on the same inputs. Upstream functions that sort or
// mutate their arguments get a fresh copy per iteration, and so does ours
// where the copy is part of a fair comparison; copies are made with the
// timer stopped only where they would dominate.

//go:linkname upstreamSyncDeployment k8s.io/kubernetes/pkg/controller/deployment.(*DeploymentController).syncDeployment
func upstreamSyncDeployment(dc *upstreamdeployment.DeploymentController, ctx context.Context, key string) error

func benchDeployment(replicas int32) *appsv1.Deployment {
	s, u := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: templatePool(0, ""),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
	}
}

// benchRSs returns n ReplicaSets of d: the last one has d's template (the
// new one), the others older templates; sizes are spread over olds.
func benchRSs(d *appsv1.Deployment, n int, sizes func(i int) int32) []*appsv1.ReplicaSet {
	rss := make([]*appsv1.ReplicaSet, n)
	for i := range rss {
		hash := fmt.Sprintf("h%d", i)
		tpl := templatePool(1, hash)
		tpl.Spec.Containers[0].Image = fmt.Sprintf("nginx:%d", i)
		if i == n-1 {
			tpl = *d.Spec.Template.DeepCopy()
			tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		}
		size := sizes(i)
		rss[i] = &appsv1.ReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID("rs-" + hash), ResourceVersion: "1",
				Labels:            map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(genNow.Add(time.Duration(i) * time.Minute)),
				Generation:        1,
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
				Annotations: map[string]string{
					"deployment.kubernetes.io/revision":         fmt.Sprint(i + 1),
					"deployment.kubernetes.io/desired-replicas": fmt.Sprint(*d.Spec.Replicas),
					"deployment.kubernetes.io/max-replicas":     fmt.Sprint(*d.Spec.Replicas + 3),
				},
			},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(size),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
				Template: tpl,
			},
			Status: appsv1.ReplicaSetStatus{Replicas: size, FullyLabeledReplicas: size, ReadyReplicas: size, AvailableReplicas: size,
				ObservedGeneration: 1, TerminatingReplicas: ptr(int32(0))},
		}
	}
	return rss
}

func BenchmarkResolveFenceposts(b *testing.B) {
	s, u := intstr.FromString("25%"), intstr.FromInt32(2)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = rollout.ResolveFenceposts(&s, &u, 13)
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = deploymentutil.ResolveFenceposts(&s, &u, 13)
		}
	})
}

func BenchmarkNewRSNewReplicas(b *testing.B) {
	d := benchDeployment(10)
	rss := benchRSs(d, 3, func(i int) int32 { return []int32{4, 3, 5}[i] })
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			_, _ = rollout.NewRSNewReplicas(d, rss, rss[2])
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
			_, _ = deploymentutil.NewRSNewReplicas(d, rss, rss[2])
		}
	})
}

// BenchmarkProportionalScale10RS scales a paused Deployment from 30 to 50
// replicas over 10 active ReplicaSets. Ours is rollout.Proportional, the
// whole decision: the sizes and the annotated objects to write. Upstream is
// the decision part of its unexported scale() with the API writes left out:
// FindActiveOrLatest and IsSaturated, the sort by size,
// GetReplicaSetProportion per ReplicaSet, leftover to the first, and for
// every active ReplicaSet the DeepCopy + SetReplicasAnnotations that
// scaleReplicaSet does before its Update.
func BenchmarkProportionalScale10RS(b *testing.B) {
	d := benchDeployment(50)
	d.Spec.Paused = true
	rss := benchRSs(d, 10, func(i int) int32 { return 3 })
	for _, rs := range rss {
		rs.Annotations["deployment.kubernetes.io/max-replicas"] = "33"
	}
	newRS, olds := rss[9], rss[:9]
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			scales, err := rollout.Proportional(d, newRS, olds)
			if err != nil || len(scales) == 0 {
				b.Fatalf("Proportional = %d scales, %v", len(scales), err)
			}
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
			if deploymentutil.FindActiveOrLatest(newRS, append([]*appsv1.ReplicaSet(nil), olds...)) != nil {
				b.Fatal("unexpected single active ReplicaSet")
			}
			if deploymentutil.IsSaturated(d, newRS) {
				b.Fatal("unexpected saturation")
			}
			active := controller.FilterActiveReplicaSets(append([]*appsv1.ReplicaSet(nil), rss...))
			surge := deploymentutil.MaxSurge(*d)
			allowed := *d.Spec.Replicas + surge
			toAdd := allowed - deploymentutil.GetReplicaCountForReplicaSets(active)
			sort.Sort(controller.ReplicaSetsBySizeNewer(active))
			var added int32
			nameToSize := make(map[string]int32, len(active))
			for _, rs := range active {
				p := deploymentutil.GetReplicaSetProportion(discard, rs, *d, toAdd, added)
				nameToSize[rs.Name] = *rs.Spec.Replicas + p
				added += p
			}
			if leftover := toAdd - added; leftover != 0 {
				nameToSize[active[0].Name] = max(nameToSize[active[0].Name]+leftover, 0)
			}
			for _, rs := range active {
				rsCopy := rs.DeepCopy()
				size := nameToSize[rs.Name]
				rsCopy.Spec.Replicas = &size
				deploymentutil.SetReplicasAnnotations(rsCopy, *d.Spec.Replicas, *d.Spec.Replicas+surge)
			}
		}
	})
}

func BenchmarkComputeHash(b *testing.B) {
	tpl := templatePool(3, "")
	cc := int32(1)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			_ = rollout.ComputeHash(&tpl, &cc)
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
			_ = controller.ComputeHash(&tpl, &cc)
		}
	})
}

func BenchmarkDeploymentCalculateStatus10RS(b *testing.B) {
	d := benchDeployment(10)
	rss := benchRSs(d, 10, func(i int) int32 { return int32(i % 3) })
	newRS := rss[9]
	b.Run("impl=ctrlkit", func(b *testing.B) {
		for b.Loop() {
			_, _ = rollout.CalculateStatus(d, rss, newRS, genNow)
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		for b.Loop() {
			_ = upstreamDeploymentStatus(rss, newRS, d)
		}
	})
}

// benchPods builds n owned, running, ready pods spread over 50 nodes.
func benchPods(rs *appsv1.ReplicaSet, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%05d", rs.Name, i), Namespace: rs.Namespace, UID: types.UID(fmt.Sprintf("pod-%05d", i)),
				Labels: rs.Spec.Template.Labels, ResourceVersion: "1",
				CreationTimestamp: metav1.NewTime(genNow.Add(-time.Duration(i*37%5000) * time.Second)),
				OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
			},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%50), Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(genNow.Add(-time.Duration(i*53%7000) * time.Second))}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: int32(i % 3)}}},
		}
	}
	return pods
}

// BenchmarkManageReplicasDelete100Of10000 chooses 100 of 10,000 pods to
// delete: ours ManageReplicas (ranking, plan, status) vs upstream's
// getPodsToDelete (ranking + sort.Sort on a copy of the list).
func BenchmarkManageReplicasDelete100Of10000(b *testing.B) {
	d := benchDeployment(9900)
	rs := benchRSs(d, 1, func(int) int32 { return 9900 })[0]
	pods := benchPods(rs, 10_000)
	b.Run("impl=ctrlkit", func(b *testing.B) {
		in := replicaset.Input{ReplicaSet: rs, Active: pods, Related: pods, ExpectationsSatisfied: true}
		for b.Loop() {
			if _, err := replicaset.ManageReplicas(in, genNow); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		// getPodsToDelete ranks with the wall clock; shift the pods so the
		// log2 buckets match ours.
		shifted := make([]*corev1.Pod, len(pods))
		for i, p := range pods {
			shifted[i] = p.DeepCopy()
			shiftPod(shifted[i], time.Since(genNow))
		}
		for b.Loop() {
			in := append([]*corev1.Pod(nil), shifted...)
			_ = upstreamGetPodsToDelete(in, shifted, 100)
		}
	})
}

// rsNoopWorld is a ReplicaSet with n ready pods and an up-to-date status:
// a sync writes nothing.
func rsNoopWorld(n int) rsWorld {
	d := benchDeployment(int32(n))
	rs := benchRSs(d, 1, func(int) int32 { return int32(n) })[0]
	pods := benchPods(rs, n)
	return rsWorld{rs: rs, pods: pods}
}

func BenchmarkReplicaSetSyncNoop(b *testing.B) {
	ctx := quietCtx()
	for _, n := range []int{10, 1000} {
		w := rsNoopWorld(n)
		b.Run(fmt.Sprintf("pods=%d/impl=ctrlkit", n), func(b *testing.B) {
			h := newOursRSCachedHarness(b, w)
			if out := h.sync(ctx); out.created+len(out.deleted) > 0 || out.status != nil || out.err {
				b.Fatalf("ours is not a no-op: %v", out)
			}
			for b.Loop() {
				if _, err := h.rec.Reconcile(ctx, h.key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("pods=%d/impl=upstream", n), func(b *testing.B) {
			h := newUpstreamRSHarness(ctx, w)
			if out := h.sync(ctx); out.created+len(out.deleted) > 0 || out.status != nil || out.err {
				b.Fatalf("upstream is not a no-op: %v", out)
			}
			for b.Loop() {
				if err := upstreamSyncReplicaSet(h.rsc, ctx, h.key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// completeDeployment is a finished rollout: the new RS holds all 10
// replicas, 9 old ones are at 0, and the status says so.
func completeDeployment() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	d := benchDeployment(10)
	rss := benchRSs(d, 10, func(i int) int32 {
		if i == 9 {
			return 10
		}
		return 0
	})
	for _, rs := range rss {
		rs.Annotations["deployment.kubernetes.io/max-replicas"] = "13"
	}
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "10"}
	ts := metav1.NewTime(genNow)
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 10, UpdatedReplicas: 10, ReadyReplicas: 10, AvailableReplicas: 10,
		TerminatingReplicas: ptr(int32(0)),
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: ts, LastTransitionTime: ts},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "web-h9" has successfully progressed.`, LastUpdateTime: ts, LastTransitionTime: ts},
		},
	}
	return d, rss
}

func BenchmarkDeploymentSyncNoop10RS(b *testing.B) {
	d, rss := completeDeployment()
	b.Run("impl=ctrlkit", func(b *testing.B) {
		st := deployment.State{Deployment: d, ReplicaSets: rss}
		p, err := deployment.Sync(st, genNow)
		if err != nil || p.HasWrites() {
			b.Fatalf("ours is not a no-op: %v %v", p, err)
		}
		for b.Loop() {
			_, _ = deployment.Sync(st, genNow)
		}
	})
	b.Run("impl=upstream", func(b *testing.B) {
		ctx := quietCtx()
		client := fake.NewSimpleClientset(d.DeepCopy())
		for _, rs := range rss {
			_ = client.Tracker().Add(rs.DeepCopy())
		}
		f := informers.NewSharedInformerFactory(client, 0)
		dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
		dc, err := upstreamdeployment.NewDeploymentController(ctx, dInf, rsInf, podInf, client)
		if err != nil {
			b.Fatal(err)
		}
		_ = dInf.Informer().GetIndexer().Add(d)
		for _, rs := range rss {
			_ = rsInf.Informer().GetIndexer().Add(rs)
		}
		client.ClearActions()
		if err := upstreamSyncDeployment(dc, ctx, "ns/web"); err != nil {
			b.Fatal(err)
		}
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				b.Fatalf("upstream is not a no-op: %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
		for b.Loop() {
			_ = upstreamSyncDeployment(dc, ctx, "ns/web")
		}
	})
}
