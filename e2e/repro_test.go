package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/rollout"
)

// The Deployment controller writes the revision annotation of a
// Deployment through the status subresource, as upstream does (see
// deployment.Plan.UpdateStatus); kube-apiserver keeps annotations on a
// Deployment status update (deploymentStatusStrategy.PrepareForUpdate
// resets only spec and labels), and kubectl rollout status --revision and
// rollout history read it.
func TestDeploymentRevisionAnnotation(t *testing.T) {
	t.Run("api", func(t *testing.T) {
		ctx := context.Background()
		c := memcluster.New(memcluster.Config{Clock: clock.NewFake(epoch)})
		d, err := c.Deployments(ns).Create(ctx, newDeployment("web", 1, "app:1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Annotations = map[string]string{rollout.RevisionAnnotation: "1"}
		d.Status.ObservedGeneration = 1
		if _, err := c.Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := c.Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[rollout.RevisionAnnotation] != "1" {
			t.Errorf("annotations after UpdateStatus = %v; want the revision annotation kept", got.Annotations)
		}
	})
	t.Run("rollout", func(t *testing.T) {
		w := newWorld(t, worldConfig{Seed: 2})
		w.create(newDeployment("web", 3, "app:1"))
		w.converge(limit)
		w.setImage("web", "app:2")
		w.converge(limit)
		if r, err := rollout.Revision(w.get("web")); err != nil || r != 2 {
			t.Errorf("revision of the deployment = %d, %v; want 2", r, err)
		}
	})
}
