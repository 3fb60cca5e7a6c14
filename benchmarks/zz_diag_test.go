package benchmarks

import (
	"slices"
	"testing"
	"time"
)

func TestZZLatenessDiag(t *testing.T) {
	for _, impl := range impls {
		const n = 100_000
		late := latenessRound(newQueue[int](impl), n, 2)
		buckets := map[int][]time.Duration{}
		for i, l := range late {
			d := delayFor(i, 10*time.Millisecond, 990*time.Millisecond)
			buckets[int(d/(100*time.Millisecond))] = append(buckets[int(d/(100*time.Millisecond))], l)
		}
		for b := 0; b < 10; b++ {
			ls := buckets[b]
			slices.Sort(ls)
			t.Logf("%s delay %d00ms: n=%d p50=%v p99=%v max=%v", impl, b, len(ls), ls[len(ls)/2], ls[len(ls)*99/100], ls[len(ls)-1])
		}
	}
}
