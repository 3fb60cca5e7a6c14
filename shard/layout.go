package shard

import (
	"fmt"
	"slices"
)

// Layout chooses where the ranges of a new group start.
type Layout string

// The layouts.
const (
	// LayoutEven cuts the hash space into equal ranges ([Split]). It
	// balances names whose hashes spread evenly, such as random ones.
	LayoutEven Layout = "even"
	// LayoutNamespaces starts the ranges at quantiles of the hashes of the
	// namespaces that exist when the group is created, so that each range
	// starts with the same number of them. FNV-1a, the hash kube-apiserver
	// shards by, spreads similar short names badly: the hashes of ns-000
	// to ns-199 all fall in 2 of 16 equal ranges. With fewer than two
	// namespaces per range it is [LayoutEven].
	LayoutNamespaces Layout = "namespaces"
)

// Cut returns the n ranges of layout l, given the namespaces that exist
// (read for [LayoutNamespaces] only).
func (l Layout) Cut(n int, namespaces []string) ([]Range, error) {
	even, err := Split(n)
	if err != nil {
		return nil, err
	}
	switch l {
	case LayoutEven:
		return even, nil
	case LayoutNamespaces:
	default:
		return nil, fmt.Errorf("shard: unknown layout %q; want %q or %q", l, LayoutEven, LayoutNamespaces)
	}
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		hashes = append(hashes, Hash(ns))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	k := len(hashes)
	if k < 2*n {
		return even, nil
	}
	out := make([]Range, n)
	for i := 1; i < n; i++ {
		out[i].First = hashes[i*k/n] // strictly increasing: k >= 2n
		out[i-1].Last = out[i].First - 1
	}
	out[n-1].Last = even[n-1].Last
	return out, nil
}
