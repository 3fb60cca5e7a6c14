package site

import (
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest"
)

// The stale read, as Explore found it (the replay line of
// TestExploreFindsTheStaleReady's report). If a change to the bench moves
// its steps, this replay no longer shows the mistake: run
// TestExploreFindsTheStaleReady with -v and paste its replay line here.
const staleReadyReplay = "seed=9 schedule=69:2"

func scheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// scenario runs the operator (with the mistake or the fix), makes a Site,
// waits until it is ready, moves it to a new image and waits again.
func scenario(trustCache bool) clustertest.Scenario {
	return func(t testing.TB, c *clustertest.Cluster) {
		mgr := c.NewManager(ctrl.Options{})
		if err := (&Reconciler{Client: mgr.GetClient(), trustCache: trustCache}).SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
		c.Start(mgr)
		c.Advance(time.Second) // the Manager's caches sync
		site := &Site{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}, Spec: SiteSpec{Image: "shop:1", Replicas: 2}}
		if err := c.Client().Create(t.Context(), site); err != nil {
			t.Fatal(err)
		}
		c.MustRunUntil("shop:1 ready", readyAt(t, c, "shop:1"), time.Hour)
		for {
			var cur Site
			if err := c.Client().Get(t.Context(), client.ObjectKeyFromObject(site), &cur); err != nil {
				t.Fatal(err)
			}
			cur.Spec.Image = "shop:2"
			err := c.Client().Update(t.Context(), &cur)
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
		}
		c.MustRunUntil("shop:2 ready", readyAt(t, c, "shop:2"), time.Hour)
	}
}

func readyAt(t testing.TB, c *clustertest.Cluster, image string) func() bool {
	return func() bool {
		var s Site
		if err := c.Client().Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "shop"}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Spec.Image == image && s.Status.Ready && s.Status.ObservedGeneration == s.Generation
	}
}

// readyMeansRolledOut is the property: when the operator writes a Site
// ready at its generation, the Deployment stored at that moment runs the
// Site's image on every replica, all available.
var readyMeansRolledOut = clustertest.Property{Name: "ready means rolled out", Always: func(s *clustertest.State) error {
	for _, w := range s.Writes() {
		site, ok := w.Object.(*Site)
		if !ok || !site.Status.Ready || site.Status.ObservedGeneration != site.Generation {
			continue
		}
		dep, _ := s.Get("deployments", site.Namespace, site.Name).(*appsv1.Deployment)
		if dep == nil {
			return fmt.Errorf("site %s/%s written ready by %s with no Deployment", site.Namespace, site.Name, w.By)
		}
		if !shows(site, dep) || !rolledOut(dep) {
			st := dep.Status
			return fmt.Errorf("site %s/%s written ready for %s by %s, but its Deployment (generation %d, observed %d, image %s) has %d updated and %d available of %d",
				site.Namespace, site.Name, site.Spec.Image, w.By, dep.Generation, st.ObservedGeneration,
				dep.Spec.Template.Spec.Containers[0].Image, st.UpdatedReplicas, st.AvailableReplicas, site.Spec.Replicas)
		}
	}
	return nil
}}

func options(t testing.TB) clustertest.ExploreOptions {
	opts := clustertest.ExploreOptions{
		Options:    clustertest.Options{Scheme: scheme(t), Types: []client.Object{&Site{}}},
		Seeds:      12,
		Properties: []clustertest.Property{readyMeansRolledOut, clustertest.DeploymentsCheck(), clustertest.Converges(time.Hour)},
	}
	return opts
}

// TestExploreFindsTheStaleReady: with the mistake, Explore finds a Site
// reported ready from a stale read, and shrinks it to a few reorderings.
func TestExploreFindsTheStaleReady(t *testing.T) {
	opts := options(t)
	opts.ExpectViolation = true
	v := clustertest.Explore(t, opts, scenario(true))
	if v == nil {
		return // Explore failed the test
	}
	if v.Property != readyMeansRolledOut.Name {
		t.Fatalf("violated %q (%s), want %q", v.Property, v.Message, readyMeansRolledOut.Name)
	}
	if len(v.Schedule) == 0 || len(v.Schedule) > 12 {
		t.Errorf("shrunk to %d reorderings (%s), want 1 to 12", len(v.Schedule), v.Replay)
	}
}

// TestStaleReadyReplay keeps the failing replay: the mistake fails it,
// the fix passes it.
func TestStaleReadyReplay(t *testing.T) {
	opts := options(t)
	opts.Replay, opts.ExpectViolation = staleReadyReplay, true
	if v := clustertest.Explore(t, opts, scenario(true)); v != nil && v.Property != readyMeansRolledOut.Name {
		t.Fatalf("the replay violated %q (%s), want %q", v.Property, v.Message, readyMeansRolledOut.Name)
	}
	if t.Failed() {
		t.Fatalf("the replay %q no longer shows the mistake: the bench's steps moved; run TestExploreFindsTheStaleReady -v and keep its replay line", staleReadyReplay)
	}
	opts.ExpectViolation = false
	clustertest.Explore(t, opts, scenario(false))
}

// TestExploreFindsNothingInTheFix: the same exploration of the fixed
// operator breaks no property.
func TestExploreFindsNothingInTheFix(t *testing.T) {
	opts := options(t)
	if raceEnabled {
		opts.Seeds = 4
	}
	clustertest.Explore(t, opts, scenario(false))
}

// TestExploreWithLagsFindsTheStaleReady: the same mistake, found by an
// informer held back (Perturb) rather than by a reordering alone.
func TestExploreWithLagsFindsTheStaleReady(t *testing.T) {
	if raceEnabled {
		t.Skip("minutes under -race on two cores; TestExploreFindsTheStaleReady covers the same paths")
	}
	opts := options(t)
	opts.Options.Perturb = clustertest.PerturbLag
	opts.ExpectViolation = true
	v := clustertest.Explore(t, opts, scenario(true))
	if v == nil {
		return
	}
	if v.Property != readyMeansRolledOut.Name {
		t.Fatalf("violated %q (%s), want %q", v.Property, v.Message, readyMeansRolledOut.Name)
	}
}
