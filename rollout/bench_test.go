package rollout

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func BenchmarkResolveFenceposts(b *testing.B) {
	s, u := intOrStr("25%"), intOrStr("25%")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ResolveFenceposts(s, u, 10); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMaxSurgeMaxUnavailable(b *testing.B) {
	d := deploy(10, "25%", "25%")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MaxSurge(d); err != nil {
			b.Fatal(err)
		}
		if _, err := MaxUnavailable(d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewRSNewReplicas(b *testing.B) {
	d := deploy(10, "25%", "25%")
	newRS := rs("new", 10, 3, tpl("v2"))
	all := []*appsv1.ReplicaSet{rs("old", 0, 10), newRS}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewRSNewReplicas(d, all, newRS); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIsSaturatedAndAnnotationsNeedUpdate(b *testing.B) {
	d := deploy(10, "25%", "25%")
	r := rs("new", 0, 10, replicasAnn(10, 13))
	b.ReportAllocs()
	for b.Loop() {
		if !IsSaturated(d, r) || ReplicasAnnotationsNeedUpdate(r, 10, 13) {
			b.Fatal("unexpected")
		}
	}
}

// tenReplicaSets is a mid-rollout world: nine old ReplicaSets and a new one.
func tenReplicaSets() (*appsv1.Deployment, *appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	d := deploy(100, "25%", "25%")
	var olds []*appsv1.ReplicaSet
	for i := range 9 {
		olds = append(olds, rs(fmt.Sprintf("old%d", i), i, int32(5+i), replicasAnn(80, 100), rev(fmt.Sprint(i+1))))
	}
	return d, rs("new", 20, 19, tpl("v2"), replicasAnn(80, 100), rev("10")), olds
}

func BenchmarkProportional10(b *testing.B) {
	d, newRS, olds := tenReplicaSets()
	b.ReportAllocs()
	for b.Loop() {
		if s, err := Proportional(d, newRS, olds); err != nil || len(s) != 10 {
			b.Fatal(len(s), err)
		}
	}
}

func BenchmarkRolling10(b *testing.B) {
	d, newRS, olds := tenReplicaSets()
	*newRS.Spec.Replicas = 100
	newRS.Status.AvailableReplicas = 100
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Rolling(d, newRS, olds); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkComputeHash(b *testing.B) {
	tpl := catsTemplate(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		ComputeHash(tpl, nil)
	}
}

func BenchmarkCalculateStatus10(b *testing.B) {
	d, newRS, olds := tenReplicaSets()
	all := append(olds, newRS)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CalculateStatus(d, all, newRS, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSyncStatus10(b *testing.B) {
	d, newRS, olds := tenReplicaSets()
	all := append(olds, newRS)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SyncStatus(d, all, newRS, t0); err != nil {
			b.Fatal(err)
		}
	}
}
