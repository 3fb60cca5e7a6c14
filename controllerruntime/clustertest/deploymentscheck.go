package clustertest

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/planner"
)

// DeploymentsCheck is planner.Check ([Cluster.Check]) as a property:
// checked, for each Deployment, at every step that wrote it or one of its
// ReplicaSets, so that the report's trace ends at the violation.
func DeploymentsCheck() Property {
	return Property{Name: "planner.Check", Always: func(s *State) error {
		var keys []types.NamespacedName
		for _, w := range s.writes {
			key := types.NamespacedName{Namespace: w.Object.GetNamespace(), Name: w.Object.GetName()}
			switch w.Resource {
			case "deployments":
			case "replicasets":
				ref := metav1.GetControllerOfNoCopy(w.Object)
				if ref == nil || ref.Kind != "Deployment" {
					continue
				}
				key.Name = ref.Name
			default:
				continue
			}
			if !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
		var errs []error
		for _, key := range keys {
			errs = append(errs, s.c.checkDeployment(key, s.k)...)
		}
		return errors.Join(errs...)
	}}
}

// checkDeployment is Check for one Deployment. With k, the trace of its
// snapshots is built once, each check adding the snapshots taken since the
// last one.
func (c *Cluster) checkDeployment(key types.NamespacedName, k *checker) []error {
	c.rec.mu.Lock()
	snaps, whys := c.rec.snaps[key], c.rec.whys[key]
	c.rec.mu.Unlock()
	if len(snaps) == 0 {
		return nil
	}
	trace, err := k.traceOf(key, snaps)
	if err != nil {
		return []error{fmt.Errorf("deployment %s: %w", key, err)}
	}
	var errs []error
	for _, v := range planner.Check(trace, snaps[len(snaps)-1].Deployment) {
		msg := fmt.Sprintf("deployment %s: %s at +%v: %s", key, v.Code, v.Time.Sub(c.rec.start), v.Message)
		if v.Step < len(whys) {
			msg += whys[v.Step].String()
		}
		errs = append(errs, errors.New(msg))
	}
	return errs
}

// traceOf is planner.TraceFrom(snaps), snaps being the snapshots of
// Deployment key so far (a slice that only grows): the trace built at the
// last check, with the new snapshots added (the whole trace again at
// every step was most of the CPU a seed took).
func (k *checker) traceOf(key types.NamespacedName, snaps []planner.Snapshot) (planner.Trace, error) {
	if k == nil {
		return planner.TraceFrom(snaps)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	b := k.traces[key]
	if b == nil {
		b = &planner.TraceBuilder{}
		if k.traces == nil {
			k.traces = map[types.NamespacedName]*planner.TraceBuilder{}
		}
		k.traces[key] = b
	}
	for _, s := range snaps[len(b.Trace()):] {
		if err := b.Add(s); err != nil {
			return nil, err
		}
	}
	return b.Trace(), nil
}
