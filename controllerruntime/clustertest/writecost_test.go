package clustertest_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// TestRolloutCost rolls out CLUSTERTEST_ROLLOUT_N Deployments of 3
// replicas on one bench (skipped without it; with
// CLUSTERTEST_ROLLOUT_UNTRACKED=1, a bench with UntrackedBuiltinWrites;
// with CLUSTERTEST_ROLLOUT_WARM=1, after a bench that parses client-go's
// schemas) and prints the wall and CPU
// time as a benchmark line, for benchstat and for a CPU profile of the
// bench's writes:
//
//	CLUSTERTEST_ROLLOUT_N=100 go test -race -run TestRolloutCost -count 1 -cpuprofile cpu.out ./clustertest/
func TestRolloutCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLUSTERTEST_ROLLOUT_N"))
	if n <= 0 {
		t.Skip("set CLUSTERTEST_ROLLOUT_N to the number of Deployments to roll out")
	}
	untracked := os.Getenv("CLUSTERTEST_ROLLOUT_UNTRACKED") == "1"
	name := "tracked"
	if untracked {
		name = "untracked"
	}
	if os.Getenv("CLUSTERTEST_ROLLOUT_WARM") == "1" {
		// A bench that writes once first: client-go's schemas are parsed
		// at a process's first tracked write, not in the rollout measured.
		clustertest.Test(t, clustertest.Options{Seed: 1}, func(t *testing.T, c *clustertest.Cluster) {
			if err := c.Client().Create(t.Context(), webDeployment("warm", 1, "nginx")); err != nil {
				t.Fatal(err)
			}
		})
		name += "-warm"
	}
	start, cpu := time.Now(), cpuSeconds()
	clustertest.Test(t, clustertest.Options{Seed: 1, UntrackedBuiltinWrites: untracked}, func(t *testing.T, c *clustertest.Cluster) {
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
	fmt.Printf("BenchmarkRollout/%s/deployments=%d \t1\t%d ns/op\t%d cpu-ns/op\n", name, n, wall.Nanoseconds(), int64(used*1e9))
}

// TestUntrackedBuiltinWrites: with the option, a rollout's ReplicaSet and
// pods carry no managedFields and the Deployment only its creator's;
// without it, the built-in writers are recorded.
func TestUntrackedBuiltinWrites(t *testing.T) {
	for _, untracked := range []bool{false, true} {
		t.Run(fmt.Sprint("untracked=", untracked), func(t *testing.T) {
			clustertest.Test(t, clustertest.Options{Seed: 1, UntrackedBuiltinWrites: untracked}, func(t *testing.T, c *clustertest.Cluster) {
				d := webDeployment("web", 2, "nginx:1.27")
				if err := c.Client().Create(t.Context(), d, client.FieldOwner("me")); err != nil {
					t.Fatal(err)
				}
				c.MustRunUntil("web rolled out", rolledOut(t, c, client.ObjectKeyFromObject(d)), time.Hour)
				if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
					t.Fatal(err)
				}
				var pods corev1.PodList
				if err := c.Client().List(t.Context(), &pods, client.InNamespace("default")); err != nil {
					t.Fatal(err)
				}
				if len(pods.Items) != 2 {
					t.Fatalf("%d pods", len(pods.Items))
				}
				managers := func(entries []metav1.ManagedFieldsEntry) (out []string) {
					for _, e := range entries {
						out = append(out, e.Manager+"/"+e.Subresource)
					}
					return out
				}
				wantDeployment := []string{"me/", "kube-controller-manager/status"}
				wantPod := []string{"kube-controller-manager/", "kubelet/status"}
				if untracked {
					wantDeployment, wantPod = []string{"me/"}, nil
				}
				if got := managers(d.ManagedFields); !slices.Equal(got, wantDeployment) {
					t.Errorf("deployment's managers %v; want %v", got, wantDeployment)
				}
				for _, p := range pods.Items {
					if got := managers(p.ManagedFields); !slices.Equal(got, wantPod) {
						t.Errorf("pod %s's managers %v; want %v", p.Name, got, wantPod)
					}
				}
			})
		})
	}
}
