package shard

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"

	"github.com/ctrlkit/ctrlkit/internal/shardselector"
)

// Range is a range of the 64-bit FNV-1a hash space that kube-apiserver's
// shard selectors cut: the hashes First to Last, both included. A
// selector writes it as shardRange(field, First, Last+1), its end
// excluded ("0x10000000000000000" when Last is the largest hash).
type Range struct {
	First, Last uint64
}

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool { return r.First <= h && h <= r.Last }

// Start and End are r's bounds as a shard selector writes them: 0x and
// 16 lowercase hex digits, End excluded.
func (r Range) Start() string { return fmt.Sprintf("0x%016x", r.First) }

// End is r's end, excluded: "0x10000000000000000" (2^64) for the last
// range of the space.
func (r Range) End() string {
	if r.Last == math.MaxUint64 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", r.Last+1)
}

// String is "[Start, End)".
func (r Range) String() string { return "[" + r.Start() + ", " + r.End() + ")" }

// Hash is the hash kube-apiserver shards value by: FNV-1a, 64 bits
// (apimachinery's sharding.HashField).
func Hash(value string) uint64 {
	h, err := strconv.ParseUint(sharding.HashField(value), 16, 64)
	if err != nil { // HashField writes 16 hex digits
		panic(fmt.Sprintf("shard: sharding.HashField(%q) is not hex: %v", value, err))
	}
	return h
}

// Split cuts the hash space into n contiguous ranges of equal size (the
// last takes the remainder), as kube-apiserver's tests cut it. n must be
// at least 1.
func Split(n int) ([]Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard: cannot split the hash space into %d ranges: want at least 1", n)
	}
	space := new(big.Int).Lsh(big.NewInt(1), 64)
	span := new(big.Int).Div(space, big.NewInt(int64(n)))
	out := make([]Range, n)
	for i := range out {
		first := new(big.Int).Mul(span, big.NewInt(int64(i)))
		out[i].First = first.Uint64()
		if i == n-1 {
			out[i].Last = math.MaxUint64
			continue
		}
		out[i].Last = new(big.Int).Sub(new(big.Int).Add(first, span), big.NewInt(1)).Uint64()
	}
	return out, nil
}

// Set is a set of disjoint ranges, in order. The zero Set holds no range.
// Build it with [NewSet] or [ParseSelector].
type Set struct {
	ranges []Range
}

// NewSet returns the set of rs: each range must have First <= Last, and
// no two may overlap (adjacent ones are fine). It refuses an empty list:
// a shard owns something.
func NewSet(rs ...Range) (Set, error) {
	if len(rs) == 0 {
		return Set{}, errors.New("shard: no range: a shard needs at least one")
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b Range) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	for i, r := range sorted {
		if r.Last < r.First {
			return Set{}, fmt.Errorf("shard: range 0x%016x-0x%016x ends before it starts", r.First, r.Last)
		}
		if i > 0 && sorted[i-1].Last >= r.First {
			return Set{}, fmt.Errorf("shard: ranges %s and %s overlap", sorted[i-1], r)
		}
	}
	return Set{ranges: sorted}, nil
}

// MustSet is [NewSet] for ranges known to be valid, such as those of
// [Split]; it panics on an error.
func MustSet(rs ...Range) Set {
	s, err := NewSet(rs...)
	if err != nil {
		panic(err)
	}
	return s
}

// Ranges returns the set's ranges, in order, adjacent ones merged.
func (s Set) Ranges() []Range {
	var out []Range
	for _, r := range s.ranges {
		if n := len(out); n > 0 && out[n-1].Last != math.MaxUint64 && out[n-1].Last+1 == r.First {
			out[n-1].Last = r.Last
			continue
		}
		out = append(out, r)
	}
	return out
}

// IsZero reports whether s holds no range.
func (s Set) IsZero() bool { return len(s.ranges) == 0 }

// Contains reports whether hash h is in s.
func (s Set) Contains(h uint64) bool {
	i, _ := slices.BinarySearchFunc(s.ranges, h, func(r Range, h uint64) int {
		if r.Last < h {
			return -1
		}
		if r.First > h {
			return 1
		}
		return 0
	})
	return i < len(s.ranges) && s.ranges[i].Contains(h)
}

// ContainsNamespace reports whether the objects of namespace ns are in s:
// those a shard selector of s on object.metadata.namespace selects.
func (s Set) ContainsNamespace(ns string) bool { return s.Contains(Hash(ns)) }

// Selector is the shard selector of s on object.metadata.namespace, for
// metav1.ListOptions.ShardSelector: its ranges (adjacent ones merged)
// joined by ||. The zero Set has none: "".
func (s Set) Selector() string {
	var parts []string
	for _, r := range s.Ranges() {
		parts = append(parts, fmt.Sprintf("shardRange(%s, '%s', '%s')", shardselector.FieldNamespace, r.Start(), r.End()))
	}
	return strings.Join(parts, " || ")
}

// String lists the ranges, adjacent ones merged.
func (s Set) String() string {
	var parts []string
	for _, r := range s.Ranges() {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, " ")
}

// ParseSelector reads a shard selector on object.metadata.namespace in
// kube-apiserver's language (shardRange(object.metadata.namespace,
// '0x…', '0x…') joined by ||) into a Set. It refuses what kube-apiserver
// refuses, with its message, and besides a selector on another field and
// overlapping ranges (kube-apiserver accepts those; a shard that owns a
// range twice is a mistake).
func ParseSelector(selector string) (Set, error) {
	sel, err := shardselector.Parse(selector)
	if err != nil {
		return Set{}, fmt.Errorf("shard: invalid shard selector: %w", err)
	}
	var rs []Range
	for _, req := range sel.Requirements() {
		if req.Key != shardselector.FieldNamespace {
			return Set{}, fmt.Errorf("shard: selector %q shards by %s; ctrlkit shards by %s (a Deployment, its ReplicaSets and pods share a namespace, not a UID)", selector, req.Key, shardselector.FieldNamespace)
		}
		first, err := strconv.ParseUint(strings.TrimPrefix(req.Start, "0x"), 16, 64)
		if err != nil {
			return Set{}, fmt.Errorf("shard: range start %s: %w", req.Start, err)
		}
		last := uint64(math.MaxUint64)
		if req.End != "0x10000000000000000" {
			end, err := strconv.ParseUint(strings.TrimPrefix(req.End, "0x"), 16, 64)
			if err != nil {
				return Set{}, fmt.Errorf("shard: range end %s: %w", req.End, err)
			}
			last = end - 1 // end > start >= 0
		}
		rs = append(rs, Range{First: first, Last: last})
	}
	return NewSet(rs...)
}
