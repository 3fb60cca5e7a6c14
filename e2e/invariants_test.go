package e2e

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/rollout"
)

// checker replays a history and checks the invariants of package e2e at
// every state.
type checker struct {
	s         *state
	deleted   map[types.UID]bool  // pods the ReplicaSet controller deleted
	failed    map[types.UID]int32 // its failed pod creations, by ReplicaSet
	rssOf     map[types.UID]map[types.UID]bool
	podsOf    map[types.UID]map[types.UID]bool
	armed     map[types.UID]bool            // Deployment complete since its last resize
	specs     map[types.UID]map[int64]int32 // ReplicaSet spec.replicas by generation
	depSpecs  map[types.UID]map[int64]depSpec
	scaled    map[types.UID]bool // ReplicaSets last grown by a step that may not be a Recreate rollout's
	revisions map[types.UID]int64
	// dupRevisions marks the Deployments already reported for two
	// ReplicaSets with one revision.
	dupRevisions map[types.UID]bool
	rv           uint64
	violations   []string
}

// check replays history (in resourceVersion order) and returns the
// violations found; deleted holds the UIDs of the pods the ReplicaSet
// controller asked to delete, and failed its failed pod creations by
// ReplicaSet UID.
func check(history []record, deleted map[types.UID]bool, failed map[types.UID]int32) []string {
	c := &checker{
		s: newState(), deleted: deleted, failed: failed,
		rssOf: map[types.UID]map[types.UID]bool{}, podsOf: map[types.UID]map[types.UID]bool{},
		armed: map[types.UID]bool{}, specs: map[types.UID]map[int64]int32{}, revisions: map[types.UID]int64{},
		depSpecs: map[types.UID]map[int64]depSpec{}, scaled: map[types.UID]bool{},
		dupRevisions: map[types.UID]bool{},
	}
	for _, rec := range history {
		c.rv = rec.rv
		switch o := rec.obj.(type) {
		case *appsv1.Deployment:
			c.deployment(rec.typ, o)
		case *appsv1.ReplicaSet:
			c.replicaSet(rec.typ, o)
		case *corev1.Pod:
			c.pod(rec.typ, o)
		}
	}
	return c.violations
}

func (c *checker) violate(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf("rv %d: ", c.rv)+fmt.Sprintf(format, args...))
}

func (c *checker) deployment(typ watch.EventType, d *appsv1.Deployment) {
	prev := c.s.deps[d.UID]
	c.s.apply(record{typ: typ, obj: d})
	if typ == watch.Deleted {
		delete(c.armed, d.UID)
		return
	}
	if c.depSpecs[d.UID] == nil {
		c.depSpecs[d.UID] = map[int64]depSpec{}
	}
	c.depSpecs[d.UID][d.Generation] = depSpec{replicas: *d.Spec.Replicas, paused: d.Spec.Paused,
		recreate: d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType}
	if prev != nil && (*prev.Spec.Replicas != *d.Spec.Replicas || !equality.Semantic.DeepEqual(prev.Spec.Strategy, d.Spec.Strategy)) {
		c.armed[d.UID] = false // a resize: the bounds hold again once it is complete
	}
	if d.Status.ObservedGeneration >= d.Generation && rollout.DeploymentComplete(d, d.Status) {
		c.armed[d.UID] = true
	}
	c.deploymentRevision(d)
	c.bounds(d.UID)
}

func (c *checker) replicaSet(typ watch.EventType, rs *appsv1.ReplicaSet) {
	prev := c.s.rss[rs.UID]
	prevOwner, prevSpec := types.UID(""), int32(0)
	if prev != nil {
		prevOwner, prevSpec = controllerUID(prev), *prev.Spec.Replicas
	}
	if typ != watch.Deleted && *rs.Spec.Replicas > prevSpec {
		c.scaled[rs.UID] = c.maybeScaling(controllerUID(rs)) // decided on the state before this write
	}
	c.s.apply(record{typ: typ, obj: rs})
	c.reindex(c.rssOf, rs.UID, prevOwner, controllerUID(rs), typ)
	if typ == watch.Deleted {
		c.bounds(controllerUID(rs))
		return
	}
	if c.specs[rs.UID] == nil {
		c.specs[rs.UID] = map[int64]int32{}
	}
	c.specs[rs.UID][rs.Generation] = *rs.Spec.Replicas
	c.revision("rs "+rs.Name, rs)
	if prevOwner != controllerUID(rs) {
		c.bounds(prevOwner)
	}
	c.bounds(controllerUID(rs))
}

func (c *checker) pod(typ watch.EventType, p *corev1.Pod) {
	prev := c.s.pods[p.UID]
	owner, prevOwner := controllerUID(p), types.UID("")
	if prev != nil {
		prevOwner = controllerUID(prev)
	}
	if n := controllers(p); n > 1 {
		c.violate("pod %s has %d controllers", p.Name, n)
	}
	switch {
	case prev == nil && typ != watch.Deleted:
		c.created(p, owner)
	case prev != nil && prev.DeletionTimestamp == nil && (typ == watch.Deleted || p.DeletionTimestamp != nil):
		c.deleting(prev)
	}
	c.s.apply(record{typ: typ, obj: p})
	c.reindex(c.podsOf, p.UID, prevOwner, owner, typ)
	if rs := c.s.rss[owner]; rs != nil {
		c.bounds(controllerUID(rs))
	}
	if prevOwner != owner {
		if rs := c.s.rss[prevOwner]; rs != nil {
			c.bounds(controllerUID(rs))
		}
	}
}

// created checks a new pod of ReplicaSet owner: the ReplicaSet asked for
// it, and, for Recreate, no pod of another revision exists, unless the
// ReplicaSet's last growth may have been a scaling step (see
// maybeScaling).
func (c *checker) created(p *corev1.Pod, owner types.UID) {
	rs := c.s.rss[owner]
	if rs == nil {
		return // an orphan, or its ReplicaSet was just deleted (collected next)
	}
	if active := c.active(owner) + 1; active > c.maxSpec(rs)+c.failed[owner] {
		c.violate("pod %s created for rs %s beyond its spec: %d active pods, spec %d (at most %d since generation %d; %d failed creations)",
			p.Name, rs.Name, active, *rs.Spec.Replicas, c.maxSpec(rs), rs.Status.ObservedGeneration, c.failed[owner])
	}
	d := c.s.deps[controllerUID(rs)]
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || c.scaled[owner] {
		return
	}
	for other := range c.rssOf[d.UID] {
		if other == rs.UID {
			continue
		}
		for uid := range c.podsOf[other] {
			if op := c.s.pods[uid]; op.Status.Phase != corev1.PodSucceeded && op.Status.Phase != corev1.PodFailed {
				c.violate("recreate deployment %s: pod %s of rs %s created while pod %s of rs %s exists",
					d.Name, p.Name, rs.Name, op.Name, c.s.rss[other].Name)
				return
			}
		}
	}
}

// depSpec is what maybeScaling needs of one generation of a Deployment's
// spec.
type depSpec struct {
	replicas         int32
	paused, recreate bool
}

// maybeScaling reports whether the Deployment controller, growing a
// ReplicaSet of Deployment uid now, may have done so in a step other than
// a Recreate rollout's. Upstream guarantees no overlap of old and new pods
// only there: rolloutRecreate grows the new ReplicaSet once no old pod is
// running. A paused Deployment, or a scaling event (an active ReplicaSet's
// desired-replicas annotation differs from spec.replicas), goes through
// sync() and scale() instead, which size the only active ReplicaSet — or,
// with none active, the newest — to spec.replicas at once, old pods
// terminating or not; and a RollingUpdate step overlaps by design. The
// controller decides from its cache, which may be behind: it acted on a
// generation of the spec no older than the status's observedGeneration,
// so every such generation counts. The ReplicaSets are taken as recorded
// before this write; only this controller writes their annotations, and it
// waits for its own writes.
func (c *checker) maybeScaling(uid types.UID) bool {
	d := c.s.deps[uid]
	if d == nil {
		return false
	}
	var rss []*appsv1.ReplicaSet
	for rsUID := range c.rssOf[uid] {
		rss = append(rss, c.s.rss[rsUID])
	}
	for gen, spec := range c.depSpecs[uid] {
		if gen < d.Status.ObservedGeneration || gen > d.Generation {
			continue
		}
		if spec.paused || !spec.recreate {
			return true
		}
		for _, rs := range rollout.FilterActive(rss) {
			if n, ok, _ := rollout.AnnotatedDesiredReplicas(rs); ok && n != spec.replicas {
				return true
			}
		}
	}
	return false
}

// deleting checks a pod whose deletion starts: the ReplicaSet controller
// deleted a surplus pod, or the pod's owner is gone.
func (c *checker) deleting(p *corev1.Pod) {
	owner := controllerUID(p)
	rs := c.s.rss[owner]
	if !c.deleted[p.UID] {
		if rs == nil || rs.DeletionTimestamp != nil {
			return // collected with its owner
		}
		c.violate("pod %s of rs %s lost: deleted, but not by the controller", p.Name, rs.Name)
		return
	}
	if rs == nil || rs.DeletionTimestamp != nil {
		return
	}
	if active := c.active(owner); active <= c.minSpec(rs) {
		c.violate("pod %s of rs %s deleted below its spec: %d active pods, spec %d (at least %d since generation %d)",
			p.Name, rs.Name, active, *rs.Spec.Replicas, c.minSpec(rs), rs.Status.ObservedGeneration)
	}
}

// bounds checks the surge and availability bounds of Deployment uid, and
// that it has at most one ReplicaSet with its template and no two
// ReplicaSets with the same revision.
func (c *checker) bounds(uid types.UID) {
	d := c.s.deps[uid]
	if d == nil || d.DeletionTimestamp != nil {
		return
	}
	var total int32
	current := 0
	available := int32(0)
	byRevision := map[int64]string{}
	for rsUID := range c.rssOf[uid] {
		rs := c.s.rss[rsUID]
		if r, err := rollout.Revision(rs); err == nil && r > 0 {
			if other, dup := byRevision[r]; dup && !c.dupRevisions[uid] {
				c.dupRevisions[uid] = true // once per Deployment
				c.violate("deployment %s: ReplicaSets %s and %s both have revision %d", d.Name, other, rs.Name, r)
			}
			byRevision[r] = rs.Name
		}
		total += *rs.Spec.Replicas
		if rollout.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			current++
		}
		for podUID := range c.podsOf[rsUID] {
			if p := c.s.pods[podUID]; p.DeletionTimestamp == nil && podReady(p) {
				available++
			}
		}
	}
	if current > 1 {
		c.violate("deployment %s has %d ReplicaSets with its current template", d.Name, current)
	}
	if !c.armed[uid] {
		return
	}
	want := *d.Spec.Replicas
	surge, unavailable := int32(0), want
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		s, u, err := rollout.ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, want)
		if err != nil {
			c.violate("deployment %s: %v", d.Name, err)
			return
		}
		surge, unavailable = s, u
	}
	if total > want+surge {
		c.violate("deployment %s: ReplicaSets sum to %d replicas, more than %d+%d", d.Name, total, want, surge)
	}
	if available < want-unavailable {
		c.violate("deployment %s: %d pods available, fewer than %d-%d", d.Name, available, want, unavailable)
	}
}

// revision checks that obj's revision annotation never decreases.
func (c *checker) revision(what string, obj metav1.Object) {
	r, err := rollout.Revision(obj)
	if err != nil {
		c.violate("%s: %v", what, err)
		return
	}
	if last := c.revisions[obj.GetUID()]; r < last {
		c.violate("%s: revision went from %d to %d", what, last, r)
	}
	c.revisions[obj.GetUID()] = max(r, c.revisions[obj.GetUID()])
}

// active counts the pods of ReplicaSet uid that are not terminating or
// finished.
func (c *checker) active(uid types.UID) int32 {
	var n int32
	for podUID := range c.podsOf[uid] {
		p := c.s.pods[podUID]
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

// maxSpec and minSpec bound the spec.replicas the ReplicaSet controller
// may have acted on: any generation at least as new as the last one its
// status says it has observed.
func (c *checker) maxSpec(rs *appsv1.ReplicaSet) int32 {
	n := *rs.Spec.Replicas
	for gen, spec := range c.specs[rs.UID] {
		if gen >= rs.Status.ObservedGeneration {
			n = max(n, spec)
		}
	}
	return n
}

func (c *checker) minSpec(rs *appsv1.ReplicaSet) int32 {
	n := *rs.Spec.Replicas
	for gen, spec := range c.specs[rs.UID] {
		if gen >= rs.Status.ObservedGeneration {
			n = min(n, spec)
		}
	}
	return n
}

// reindex moves child from the set of its old owner to its new one.
func (c *checker) reindex(idx map[types.UID]map[types.UID]bool, child, from, to types.UID, typ watch.EventType) {
	if from != "" {
		delete(idx[from], child)
	}
	if typ == watch.Deleted || to == "" {
		return
	}
	if idx[to] == nil {
		idx[to] = map[types.UID]bool{}
	}
	idx[to][child] = true
}

// controllerUID is the UID of obj's controller, or "". obj must not be
// a nil pointer.
func controllerUID(obj metav1.Object) types.UID {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.UID
	}
	return ""
}

// controllers counts obj's owner references that claim control.
func controllers(obj metav1.Object) int {
	n := 0
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			n++
		}
	}
	return n
}
