package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

func TestZZFrom0(t *testing.T) {
	hits := 0
	for seed := uint64(1); seed <= 1500; seed++ {
		res := capture(t, "TestZZFrom0", func(tb testing.TB) {
			w := newWorld(tb, worldConfig{Seed: seed, Mode: clockMode{kind: interleaved, seed: seed, seeded: true},
				Faults: memcluster.Faults{Rules: []memcluster.FaultRule{{Verb: "watch", Latency: 100 * time.Millisecond},
					{Verb: "create", Latency: 10 * time.Millisecond}}, WatchDropRate: 0.03}})
			w.runFor(0) // the informers list the empty cluster
			for i := range 3 {
				w.create(newDeployment(fmt.Sprintf("d%d", 2-i), 2, "app:1"))
			}
			w.converge(time.Hour)
		})
		if res.failed {
			hits++
			if hits <= 2 {
				t.Logf("seed %d: %s", seed, strings.Join(res.errors, "\n"))
			}
		}
	}
	t.Logf("%d of 1500 failed", hits)
}
