package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/controller"

	"github.com/ctrlkit/ctrlkit/replicaset"
)

// upstreamSlowStartBatches transcribes the batch sizes of upstream's
// unexported replicaset.slowStartBatch loop: min(remaining, initial), then
// min(2·batch, remaining) until nothing remains.
func upstreamSlowStartBatches(count, initial int) []int {
	var out []int
	remaining := count
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		out = append(out, batch)
		remaining -= batch
	}
	return out
}

func TestSlowStartBatches(t *testing.T) {
	type in struct{ count, initial int }
	differential(t, 1,
		func(r *rand.Rand) in {
			return in{pick(r, r.IntN(20), r.IntN(1000), 500, 0, -1), pick(r, 1, 1, 2, 3, 0, -1)}
		},
		func(i in) string { return fmt.Sprintf("  count=%d initial=%d", i.count, i.initial) },
		func(i in) verdict {
			u, o := upstreamSlowStartBatches(i.count, i.initial), replicaset.SlowStartBatches(i.count, i.initial)
			if !slices.Equal(u, o) {
				return disagree("upstream %v; ours %v", u, o)
			}
			return agree()
		})
}

// expOp is one operation on expectations.
type expOp struct {
	kind     string
	key      int
	n, m     int
	uids     []string
	observed string
}

func (o expOp) String() string {
	return fmt.Sprintf("%s(rs%d n=%d m=%d uids=%v uid=%q)", o.kind, o.key, o.n, o.m, o.uids, o.observed)
}

func genExpOps(r *rand.Rand) []expOp {
	ops := make([]expOp, 1+r.IntN(25))
	uid := func() string { return fmt.Sprintf("p%d", r.IntN(6)) }
	for i := range ops {
		o := expOp{kind: pick(r, "ExpectCreations", "ExpectDeletions", "CreationObserved", "DeletionObserved", "DeletionObserved",
			"Lower", "Raise", "Set", "Delete"), key: r.IntN(2), n: r.IntN(4), m: r.IntN(4)}
		for range r.IntN(4) {
			o.uids = append(o.uids, uid())
		}
		o.observed = uid()
		ops[i] = o
	}
	return ops
}

// TestExpectations applies random operation sequences to upstream's
// UIDTrackingControllerExpectations (over ControllerExpectations) and to
// ours, and compares the counts, existence, satisfaction and pending UIDs
// after every step. Upstream keys pods by "namespace/name"; the same
// strings serve as our UIDs. Time stays well inside the 5-minute TTL (the
// TTL itself is compared in TestExpectationExpiry).
func TestExpectations(t *testing.T) {
	differential(t, 4, genExpOps,
		func(ops []expOp) string {
			s := make([]string, len(ops))
			for i, o := range ops {
				s[i] = "  " + o.String()
			}
			return strings.Join(s, "\n")
		},
		func(ops []expOp) verdict {
			up := controller.NewUIDTrackingControllerExpectations(controller.NewControllerExpectations())
			var ours replicaset.Expectations
			now := time.Now()
			keyOf := func(k int) (string, types.NamespacedName) {
				return fmt.Sprintf("ns/rs%d", k), types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("rs%d", k)}
			}
			for step, o := range ops {
				uk, ok := keyOf(o.key)
				switch o.kind {
				case "ExpectCreations":
					if err := up.ExpectCreations(discard, uk, o.n); err != nil {
						return disagree("upstream ExpectCreations: %v", err)
					}
					ours.ExpectCreations(ok, o.n, now)
				case "ExpectDeletions":
					if err := up.ExpectDeletions(discard, uk, o.uids); err != nil {
						return disagree("upstream ExpectDeletions: %v", err)
					}
					uids := make([]types.UID, len(o.uids))
					for i, u := range o.uids {
						uids[i] = types.UID(u)
					}
					ours.ExpectDeletions(ok, uids, now)
				case "CreationObserved":
					up.CreationObserved(discard, uk)
					ours.CreationObserved(ok)
				case "DeletionObserved":
					up.DeletionObserved(discard, uk, o.observed)
					ours.DeletionObserved(ok, types.UID(o.observed))
				case "Lower":
					up.LowerExpectations(discard, uk, o.n, o.m)
					ours.Lower(ok, o.n, o.m)
				case "Raise":
					up.RaiseExpectations(discard, uk, o.n, o.m)
					ours.Raise(ok, o.n, o.m)
				case "Set":
					if err := up.SetExpectations(discard, uk, o.n, o.m); err != nil {
						return disagree("upstream SetExpectations: %v", err)
					}
					ours.Set(ok, o.n, o.m, now)
				case "Delete":
					up.DeleteExpectations(discard, uk)
					ours.Delete(ok)
				}
				for k := range 2 {
					uk, ok := keyOf(k)
					ue, uexists, err := up.GetExpectations(uk)
					if err != nil {
						return disagree("upstream GetExpectations: %v", err)
					}
					oe, oexists := ours.Get(ok)
					var uadd, udel int64
					if uexists {
						uadd, udel = ue.GetExpectations()
					}
					if uexists != oexists || uadd != oe.Add || udel != oe.Del {
						return disagree("after step %d (%s), rs%d: upstream exists=%v (%d, %d); ours exists=%v (%d, %d)",
							step, o, k, uexists, uadd, udel, oexists, oe.Add, oe.Del)
					}
					if u, o2 := up.SatisfiedExpectations(discard, uk), ours.Satisfied(ok, now); u != o2 {
						return disagree("after step %d (%s), rs%d: satisfied: upstream %v; ours %v", step, o, k, u, o2)
					}
					var uuids []string
					if s := up.GetUIDs(uk); s != nil {
						uuids = s.List()
						if len(uuids) == 0 {
							uuids = []string{}
						}
					}
					var ouids []string
					if p := ours.PendingDeletions(ok); p != nil {
						ouids = []string{}
						for _, u := range p {
							ouids = append(ouids, string(u))
						}
					}
					if fmt.Sprintf("%#v", uuids) != fmt.Sprintf("%#v", ouids) {
						return disagree("after step %d (%s), rs%d: pending UIDs: upstream %#v; ours %#v", step, o, k, uuids, ouids)
					}
				}
			}
			return agree()
		})
}

// TestExpectationExpiry checks the TTL arithmetic: upstream expires an
// unfulfilled expectation strictly more than ExpectationsTimeout after it
// was set, on the real clock; ours takes the time as an argument.
func TestExpectationExpiry(t *testing.T) {
	e := replicaset.Expectation{Add: 1, Timestamp: genNow}
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{
		{controller.ExpectationsTimeout - time.Nanosecond, false},
		{controller.ExpectationsTimeout, false},
		{controller.ExpectationsTimeout + time.Nanosecond, true},
	} {
		if got := e.Expired(genNow.Add(c.after)); got != c.want {
			t.Errorf("Expired(timestamp + %v) = %v; upstream (Since(timestamp) > %v) gives %v", c.after, got, controller.ExpectationsTimeout, c.want)
		}
		if got := e.Satisfied(genNow.Add(c.after)); got != c.want {
			t.Errorf("Satisfied(timestamp + %v) = %v; want %v", c.after, got, c.want)
		}
	}
}
