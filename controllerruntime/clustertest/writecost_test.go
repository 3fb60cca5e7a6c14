package clustertest_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// TestRolloutCost rolls out CLUSTERTEST_ROLLOUT_N Deployments of 3
// replicas on one bench (skipped without it) and prints the wall and CPU
// time as a benchmark line, for benchstat and for a CPU profile of the
// bench's writes:
//
//	CLUSTERTEST_ROLLOUT_N=100 go test -race -run TestRolloutCost -count 1 -cpuprofile cpu.out ./clustertest/
func TestRolloutCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLUSTERTEST_ROLLOUT_N"))
	if n <= 0 {
		t.Skip("set CLUSTERTEST_ROLLOUT_N to the number of Deployments to roll out")
	}
	start, cpu := time.Now(), cpuSeconds()
	clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
		var keys []client.ObjectKey
		for i := range n {
			d := webDeployment(fmt.Sprintf("web-%d", i), 3, "nginx:1.27")
			if err := c.Client().Create(t.Context(), d); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, client.ObjectKeyFromObject(d))
		}
		c.MustRunUntil("all rolled out", func() bool {
			for _, k := range keys {
				if !rolledOut(t, c, k)() {
					return false
				}
			}
			return true
		}, time.Hour)
	})
	wall, used := time.Since(start), cpuSeconds()-cpu
	fmt.Printf("BenchmarkRollout/deployments=%d \t1\t%d ns/op\t%d cpu-ns/op\n", n, wall.Nanoseconds(), int64(used*1e9))
}
