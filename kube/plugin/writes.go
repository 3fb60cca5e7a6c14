package plugin

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// ReplicasWrite is one change of a Deployment's spec.replicas, seen by
// watching it: the new value and the managers that own the field in the
// version that has it (managedFields): the writer of that change.
type ReplicasWrite struct {
	// At is the owner's managedFields time (the API server's, to the
	// second), or when the change was seen if it records none.
	At       time.Time `json:"at"`
	Replicas int32     `json:"replicas"`
	// Owners are "manager" or "manager (/subresource)" for a write
	// through a subresource (/scale).
	Owners []string `json:"owners"`
}

// watchReplicas watches d for up to dur and returns the changes of
// spec.replicas it sees; it stops early once two writes by two different
// managers are seen: both sides of a fight are named then.
func watchReplicas(ctx context.Context, cs Getter, d *appsv1.Deployment, dur time.Duration, now func() time.Time) ([]ReplicasWrite, error) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	w, err := cs.AppsV1().Deployments(d.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + d.Name,
		ResourceVersion: d.ResourceVersion})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var out []ReplicasWrite
	prev := replicas(d.Spec.Replicas)
	managers := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, nil
			}
			nd, isD := ev.Object.(*appsv1.Deployment)
			if !isD || (ev.Type != watch.Modified && ev.Type != watch.Added) || replicas(nd.Spec.Replicas) == prev {
				continue
			}
			prev = replicas(nd.Spec.Replicas)
			rw := ReplicasWrite{At: now(), Replicas: prev, Owners: replicasOwners(nd)}
			for _, wr := range writers(nd) {
				if wr.replicas && wr.subresource != "status" && !wr.at.IsZero() {
					rw.At = wr.at // the newest owner's, writers() sorts newest first
					break
				}
			}
			out = append(out, rw)
			for _, o := range rw.Owners {
				managers[o] = true
			}
			if len(out) >= 2 && len(managers) >= 2 {
				return out, nil
			}
		}
	}
}

// replicasOwners are the managers that own spec.replicas of d, as
// ReplicasWrite.Owners names them, newest first.
func replicasOwners(d *appsv1.Deployment) []string {
	var out []string
	for _, w := range writers(d) {
		if w.replicas && w.subresource != "status" && !slices.Contains(out, ownerKey(w.manager, w.subresource)) {
			out = append(out, ownerKey(w.manager, w.subresource))
		}
	}
	return out
}
