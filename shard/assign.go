package shard

import (
	"cmp"
	"slices"
	"strconv"
)

// Assign decides which member owns each of n ranges (indexes 0 to n-1):
// out[i] is the owner of range i, "" if members is empty. It depends on
// the set of members only (their order and duplicates do not matter), so
// every member that sees the same live members computes the same
// assignment.
//
// The assignment is balanced and moves little: each member owns n/len
// ranges or one more (the members with the lowest hashes of their names
// take the extra ones), and ranges go to the members that rank them
// highest (rendezvous hashing: the FNV-1a hash of "member/range"), so that
// when a member leaves, mostly its own ranges move, and when one joins, it
// mostly takes ranges from the others without them trading among
// themselves.
func Assign(members []string, n int) []string {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	out := make([]string, max(n, 0))
	if len(ms) == 0 || n <= 0 {
		return out
	}
	// Capacities: n/len each, one more for the first n%len by hash.
	byHash := slices.Clone(ms)
	slices.SortFunc(byHash, func(a, b string) int {
		return cmp.Or(cmp.Compare(Hash(a), Hash(b)), cmp.Compare(a, b))
	})
	capacity := make(map[string]int, len(ms))
	for i, m := range byHash {
		capacity[m] = n / len(ms)
		if i < n%len(ms) {
			capacity[m]++
		}
	}
	type pair struct {
		score  uint64
		member string
		rng    int
	}
	pairs := make([]pair, 0, n*len(ms))
	for r := range n {
		for _, m := range ms {
			pairs = append(pairs, pair{Hash(m + "/" + strconv.Itoa(r)), m, r})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.member, b.member), cmp.Compare(a.rng, b.rng))
	})
	left := n
	for _, p := range pairs {
		if left == 0 {
			break
		}
		if out[p.rng] != "" || capacity[p.member] == 0 {
			continue
		}
		out[p.rng] = p.member
		capacity[p.member]--
		left--
	}
	return out
}
