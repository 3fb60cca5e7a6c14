package e2e

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// deploymentRevision checks that a Deployment's revision annotation never
// decreases, except when the history that held the higher revisions is
// gone: once history cleanup (revisionHistoryLimit) has deleted every
// ReplicaSet with a revision at least the last one, the next ReplicaSet
// is numbered from what is left (upstream: max of the old ReplicaSets'
// revisions + 1), and the Deployment's revision follows it down.
func (c *checker) deploymentRevision(d *appsv1.Deployment) {
	r, err := rollout.Revision(d)
	if err != nil {
		c.violate("deployment %s: %v", d.Name, err)
		return
	}
	last := c.revisions[d.UID]
	if r < last {
		reset := true
		for rsUID := range c.rssOf[d.UID] {
			if rr, err := rollout.Revision(c.s.rss[rsUID]); err == nil && rr >= last {
				reset = false
			}
		}
		if !reset {
			c.violate("deployment %s: revision went from %d to %d while a ReplicaSet still has revision %d or more", d.Name, last, r, last)
		}
		c.revisions[d.UID] = r
		return
	}
	c.revisions[d.UID] = r
}
