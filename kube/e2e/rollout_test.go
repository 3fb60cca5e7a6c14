//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/kube/internal/cluster"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCreateScaleEvents(t *testing.T) {
	t.Run("events take turns with writes", func(t *testing.T) { testCreateScaleEvents(t, false) })
	t.Run("LowPriorityEvents", func(t *testing.T) { testCreateScaleEvents(t, true) })
}

func testCreateScaleEvents(t *testing.T, lowPriorityEvents bool) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond, lowPriorityEvents: lowPriorityEvents})
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	rss := e.replicaSets()
	if len(rss) != 1 || rss[0].Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Fatalf("after create: %d ReplicaSets, want 1 at revision 1", len(rss))
	}
	for _, n := range []int32{6, 2, 0, 3} {
		e.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = &n })
		e.waitComplete("web", 30*time.Second)
		e.waitFor("pods scaled", 30*time.Second, func(s cluster.Snapshot) bool {
			rs := s.ReplicaSets[rss[0].Name]
			return rs != nil && rs.Status.Replicas == n && *rs.Spec.Replicas == n
		})
	}
	if got := len(e.replicaSets()); got != 1 {
		t.Errorf("scaling created ReplicaSets: %d, want 1", got)
	}
	// Real Event objects, from both controllers, with upstream's sources.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := e.cs.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, ev := range evs.Items {
			seen[ev.Source.Component+"/"+ev.Reason] = true
		}
		if seen["deployment-controller/ScalingReplicaSet"] && seen["replicaset-controller/SuccessfulCreate"] && seen["replicaset-controller/SuccessfulDelete"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events seen: %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRollingUpdate rolls a new image out under several maxSurge and
// maxUnavailable settings and checks the bounds at every observed state.
func TestRollingUpdate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		surge, unavail intstr.IntOrString
		maxTotal       int32 // replicas + resolved maxSurge
		minAvailable   int32 // replicas - resolved maxUnavailable
	}{
		{"default-25pct", intstr.FromString("25%"), intstr.FromString("25%"), 6 + 2, 6 - 1},
		{"surge0-unavail1", intstr.FromInt32(0), intstr.FromInt32(1), 6, 5},
		{"surge1-unavail0", intstr.FromInt32(1), intstr.FromInt32(0), 7, 6},
		{"surge3-unavail2", intstr.FromInt32(3), intstr.FromInt32(2), 9, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
			e.create(rolling(deployment("web", 6, "nginx:1"), tc.surge, tc.unavail))
			e.waitComplete("web", 30*time.Second)
			start := time.Now()
			e.update("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
			e.waitComplete("web", 60*time.Second)
			checkBounds(t, e.rec.Since(start), tc.maxTotal, tc.minAvailable)
			rss := e.replicaSets()
			if len(rss) != 2 {
				t.Fatalf("%d ReplicaSets, want 2", len(rss))
			}
			for _, rs := range rss {
				want := int32(0)
				if rs.Spec.Template.Spec.Containers[0].Image == "nginx:2" {
					want = 6
					if rev := rs.Annotations["deployment.kubernetes.io/revision"]; rev != "2" {
						t.Errorf("new ReplicaSet revision %q, want 2", rev)
					}
				}
				if *rs.Spec.Replicas != want {
					t.Errorf("rs/%s has %d replicas, want %d", rs.Name, *rs.Spec.Replicas, want)
				}
			}
		})
	}
}

// checkBounds replays entries and checks that the ReplicaSets' sizes never
// added up to more than maxTotal and that the Deployment never reported
// fewer than minAvailable available replicas.
func checkBounds(t *testing.T, entries []cluster.Entry, maxTotal, minAvailable int32) {
	t.Helper()
	sizes := map[string]int32{}
	for _, en := range entries {
		switch en.Kind {
		case "rs":
			sizes[en.Name] = en.Spec
			var total int32
			for _, n := range sizes {
				total += n
			}
			if total > maxTotal {
				t.Errorf("ReplicaSets sized %v (total %d > %d) at %v", sizes, total, maxTotal, en)
			}
		case "deploy":
			if en.ObservedGeneration == en.Generation && en.Available < minAvailable {
				t.Errorf("available %d < %d: %v", en.Available, minAvailable, en)
			}
		}
	}
}

func TestZeroSurgeZeroUnavailableIsRejected(t *testing.T) {
	e := newEnv(t, envOptions{noOperator: true})
	d := rolling(deployment("web", 3, "nginx:1"), intstr.FromInt32(0), intstr.FromInt32(0))
	_, err := e.cs.AppsV1().Deployments(e.ns).Create(e.ctx, d, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create with maxSurge=0 maxUnavailable=0: err = %v; want Invalid", err)
	}
}

func TestRecreate(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	d := deployment("web", 4, "nginx:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	e.create(d)
	e.waitComplete("web", 30*time.Second)
	old := e.replicaSets()[0].Name
	start := time.Now()
	e.update("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	e.waitComplete("web", 60*time.Second)
	// The new ReplicaSet is scaled up only once the old one has no pods.
	oldPods := int32(-1)
	for _, en := range e.rec.Since(start) {
		if en.Kind != "rs" {
			continue
		}
		if en.Name == old {
			oldPods = en.Replicas
		} else if en.Spec > 0 && oldPods != 0 {
			t.Fatalf("new rs/%s scaled to %d while old had %d pods", en.Name, en.Spec, oldPods)
		}
	}
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t, envOptions{readyDelay: 200 * time.Millisecond})
	e.create(deployment("web", 3, "nginx:1"))
	e.waitComplete("web", 30*time.Second)
	e.patch("web", pausePatch)
	e.update("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	e.waitFor("Progressing DeploymentPaused", 20*time.Second, func(s cluster.Snapshot) bool {
		return hasCondition(s.Deployments["web"], appsv1.DeploymentProgressing, "DeploymentPaused")
	})
	time.Sleep(time.Second)
	if n := len(e.replicaSets()); n != 1 {
		t.Fatalf("paused Deployment has %d ReplicaSets, want 1", n)
	}
	e.patch("web", resumePatch)
	e.waitComplete("web", 60*time.Second)
	if n := len(e.replicaSets()); n != 2 {
		t.Fatalf("resumed Deployment has %d ReplicaSets, want 2", n)
	}
}

func hasCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType, reason string) bool {
	if d == nil {
		return false
	}
	return slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == typ && c.Reason == reason
	})
}
