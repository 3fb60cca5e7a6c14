package shard

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
)

func TestSplit(t *testing.T) {
	rs, err := Split(3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{{0, 0x5555555555555554}, {0x5555555555555555, 0xaaaaaaaaaaaaaaa9}, {0xaaaaaaaaaaaaaaaa, math.MaxUint64}}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("Split(3) mismatch (-want +got):\n%s", diff)
	}
	if _, err := Split(0); err == nil || !strings.Contains(err.Error(), "want at least 1") {
		t.Errorf("Split(0) = %v; want an error", err)
	}
}

func TestSetSelector(t *testing.T) {
	rs, _ := Split(4)
	s := MustSet(rs[3], rs[0], rs[1])
	want := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
	if got := s.Selector(); got != want {
		t.Errorf("Selector() = %q; want %q", got, want)
	}
	back, err := ParseSelector(want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Ranges(), back.Ranges()); diff != "" {
		t.Errorf("ParseSelector(Selector()) mismatch (-want +got):\n%s", diff)
	}
	// Contains agrees with apimachinery's own matching of the selector.
	sel := sharding.NewSelector(
		sharding.ShardRangeRequirement{Key: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x8000000000000000"},
		sharding.ShardRangeRequirement{Key: "object.metadata.namespace", Start: "0xc000000000000000", End: "0x10000000000000000"})
	for i := range 500 {
		ns := fmt.Sprintf("tenant-%d-x", i)
		want, err := sel.Matches(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns}})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ContainsNamespace(ns); got != want {
			t.Fatalf("ContainsNamespace(%q) = %v; apimachinery's selector says %v", ns, got, want)
		}
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"no range", func() error { _, err := NewSet(); return err }, "shard: no range: a shard needs at least one"},
		{"overlap", func() error { _, err := NewSet(Range{0, 10}, Range{10, 20}); return err },
			"shard: ranges [0x0000000000000000, 0x000000000000000b) and [0x000000000000000a, 0x0000000000000015) overlap"},
		{"reversed", func() error { _, err := NewSet(Range{10, 5}); return err }, "shard: range 0x000000000000000a-0x0000000000000005 ends before it starts"},
		{"malformed selector", func() error {
			_, err := ParseSelector("shardRange(object.metadata.namespace, '0x0', '0x8000000000000000')")
			return err
		},
			`shard: invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`},
		{"by uid", func() error {
			_, err := ParseSelector("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
			return err
		}, "shard: selector \"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\" shards by object.metadata.uid; ctrlkit shards by object.metadata.namespace (a Deployment, its ReplicaSets and pods share a namespace, not a UID)"},
		{"overlapping selector", func() error {
			_, err := ParseSelector("shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x7000000000000000', '0x10000000000000000')")
			return err
		}, "shard: ranges [0x0000000000000000, 0x8000000000000000) and [0x7000000000000000, 0x10000000000000000) overlap"},
		{"zero ranges", func() error {
			return Config{Group: "g", Identity: "a", Ranges: 0, LeaseDuration: 15e9, RenewDeadline: 10e9, RetryPeriod: 2e9}.Validate()
		}, "shard: 0 ranges; want at least 1"},
		{"renew deadline", func() error {
			return Config{Group: "g", Identity: "a", Ranges: 4, LeaseDuration: 10e9, RenewDeadline: 10e9, RetryPeriod: 2e9}.Validate()
		}, "shard: lease duration 10s; want it longer than the renew deadline 10s"},
		{"identity", func() error {
			return Config{Group: "g", Identity: "A_b", Ranges: 4, LeaseDuration: 15e9, RenewDeadline: 10e9, RetryPeriod: 2e9}.Validate()
		}, `shard: identity "A_b": the Lease name "g-A_b" is not a DNS subdomain: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v;\nwant %s", err, tc.want)
			}
		})
	}
}

func TestLayoutNamespaces(t *testing.T) {
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("ns-%03d", i))
	}
	count := func(rs []Range) []int {
		out := make([]int, len(rs))
		for _, ns := range names {
			for i, r := range rs {
				if r.Contains(Hash(ns)) {
					out[i]++
				}
			}
		}
		return out
	}
	even, _ := LayoutEven.Cut(16, names)
	quant, _ := LayoutNamespaces.Cut(16, names)
	// FNV-1a puts ns-000 … ns-199 in 2 of 16 equal ranges; the quantile
	// layout gives each range 12 or 13 of them.
	used := 0
	for _, n := range count(even) {
		if n > 0 {
			used++
		}
	}
	if used > 2 {
		t.Errorf("even layout: namespaces in %d ranges; the test expects FNV-1a's clustering (2)", used)
	}
	for i, n := range count(quant) {
		if n < 12 || n > 13 {
			t.Errorf("namespaces layout: range %d holds %d namespaces; want 12 or 13", i, n)
		}
	}
	few, _ := LayoutNamespaces.Cut(16, names[:10])
	if diff := cmp.Diff(even, few); diff != "" {
		t.Errorf("namespaces layout with 10 namespaces is not the even one (-want +got):\n%s", diff)
	}
}

// TestAssign checks balance, determinism, and how little moves when a
// member leaves or joins (against the minimum).
func TestAssign(t *testing.T) {
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("ctrlkit-controller-%d", i))
		}
		return out
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7} {
		for _, ranges := range []int{4, 16, 64} {
			ms := ids(n)
			a := Assign(ms, ranges)
			per := map[string]int{}
			for _, o := range a {
				per[o]++
			}
			for _, m := range ms {
				if k := per[m]; k < ranges/n || k > (ranges+n-1)/n {
					t.Errorf("Assign(%d members, %d ranges): %s owns %d", n, ranges, m, k)
				}
			}
			rev := append([]string(nil), ms...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if diff := cmp.Diff(a, Assign(append(rev, ms[0]), ranges)); diff != "" {
				t.Errorf("Assign depends on order or duplicates (-want +got):\n%s", diff)
			}
			if n == 1 {
				continue
			}
			// One leaves: at least its ranges move; count the others.
			left := Assign(ms[1:], ranges)
			extra := 0
			for r := range a {
				if a[r] != ms[0] && left[r] != a[r] {
					extra++
				}
			}
			if extra > (ranges+n-1)/n {
				t.Errorf("Assign(%d→%d members, %d ranges): %d ranges of staying members moved", n, n-1, ranges, extra)
			}
		}
	}
}
