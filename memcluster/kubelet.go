package memcluster

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/gate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// KubeletConfig configures a [Kubelet]. The zero value is ready to use.
type KubeletConfig struct {
	// Nodes is the number of Nodes the kubelet registers, named node-0,
	// node-1, …; it binds pods to those that exist, round-robin. Zero
	// means 3.
	Nodes int
	// Zones, if set, are the topology.kubernetes.io/zone labels of the
	// Nodes: node-<n> is in Zones[n % len(Zones)]. Each must be a label
	// value (see [Kubelet.Err]).
	Zones []string
	// Model decides how each pod behaves. Nil means
	// FixedModel(DefaultPodBehavior()).
	Model PodModel
}

// Kubelet plays scheduler and kubelet for every pod of a cluster: it
// registers its Nodes (as a kubelet does; see KubeletConfig.Nodes), binds
// unscheduled pods to them, moves pods through Pending, Running and Ready,
// simulates failures, and finishes graceful deletions. A cluster should
// have at most one.
//
// It has two layers, like raft's RawNode and Node: [Kubelet.Sync] brings
// every pod up to date with the cluster clock and returns; [Kubelet.Run]
// calls Sync whenever a pod changes or the next transition is due.
//
// Every transition time is computed from the pod's scheduling time (its
// creation, or the kubelet's, whichever is later) and its [PodBehavior],
// not from when Sync happens to run: under a fake clock the timestamps
// (startTime, condition lastTransitionTime, container startedAt) are
// exact, even if Sync runs late.
type Kubelet struct {
	c       *Cluster
	model   PodModel
	nodes   []string
	started time.Time
	// statusNorm gives a status the round trip of stored objects.
	statusNorm *normalizer

	syncMu sync.Mutex // serialises Sync
	// guarded by c.mu, and only touched from Sync and podWrittenLocked:
	rnd     *rand.Rand
	pods    map[types.NamespacedName]*podState
	dirty   map[types.NamespacedName]struct{} // written since the last Sync
	dues    dueHeap                           // pods with a transition ahead
	all     bool                              // the next Sync visits every pod
	syncing bool                              // Sync is writing: its own writes are not news
	bound   int                               // binding attempts so far, for round-robin
	ips     int                               // pod IPs handed out so far

	// Run's wake-ups: a pod write, or the next transition due. On a fake
	// clock each is tracked work (clock.Source) until the Sync it causes
	// has finished; a wake-up that is pending absorbs the ones that
	// follow, as its Sync sees their writes too.
	work    *clock.Source
	mu      sync.Mutex
	woken   bool       // a wake-up is pending
	ready   bool       // ... and its turn has come
	wakeW   clock.Work // ... and this is its work
	dueT    clock.Timer
	running bool
	wakeC   chan struct{}

	err error // of the registration of the Nodes
}

type podState struct {
	uid         types.UID
	b           PodBehavior
	node        int
	ip          string
	scheduledAt time.Time

	// What the last sync left: the pod's resourceVersion after it and the
	// next transition it computed. Until either changes (someone writes
	// the pod, or the clock reaches due) the pod's status cannot change,
	// so Sync skips it; this keeps a pass over n settled pods cheap.
	synced bool
	rv     string
	due    time.Time
	queued time.Time // the due of this pod's live entry in Kubelet.dues
}

// dueHeap is a min-heap of pending transitions. An entry is live while
// its pod's state has queued == at; others are skipped when they surface.
type dueHeap []dueEntry

type dueEntry struct {
	at  time.Time
	key types.NamespacedName
}

func (h *dueHeap) push(e dueEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].at.Before(s[parent].at) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *dueHeap) pop() dueEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = dueEntry{}
	s = s[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].at.Before(s[small].at) {
			small = l
		}
		if r < len(s) && s[r].at.Before(s[small].at) {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*h = s
	return top
}

// settle records what a sync of p left and returns due.
func (st *podState) settle(rv string, due time.Time) time.Time {
	st.synced, st.rv, st.due = true, rv, due
	return due
}

// NewKubelet attaches a kubelet to c and registers its Nodes (the cluster
// serves Nodes from then on, if it did not); pods are bound and run from
// the first Sync or Run. On a fake clock it is tracked work until Run's first Sync, so
// that a simulation does not move time on before the kubelet has started.
// Call it before the simulation runs, not in the goroutine that calls Run:
// until it returns the cluster has no kubelet, and RunUntil rightly
// reports pending pods that nothing will start as a stall.
func NewKubelet(c *Cluster, cfg KubeletConfig) *Kubelet {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Model == nil {
		cfg.Model = FixedModel(DefaultPodBehavior())
	}
	k := &Kubelet{
		c:       c,
		model:   cfg.Model,
		started: c.clock.Now(),
		rnd:     rand.New(rand.NewPCG(c.cfg.Seed, 0x6b7562656c6574)),
		pods:    map[types.NamespacedName]*podState{},
		dirty:   map[types.NamespacedName]struct{}{},
		all:     true, // pods created before the kubelet
		wakeC:   make(chan struct{}, 1),
		work:    clock.NewSource(c.clock, "memcluster: kubelet"),

		statusNorm: newNormalizer(func() any { return &corev1.PodStatus{} }),
	}
	for i := range cfg.Nodes {
		k.nodes = append(k.nodes, fmt.Sprintf("node-%d", i))
	}
	k.err = checkZones(cfg.Zones)
	if k.err == nil {
		addKind(c, nodeKind()) // a kubelet registers its Node through the API
	}
	k.work.Expect() // a simulation waits for Run; it names a kubelet never run
	k.wake()
	c.mu.Lock()
	if k.err == nil {
		k.err = k.registerLocked(cfg.Zones)
	}
	c.kubelets = append(c.kubelets, k)
	c.mu.Unlock()
	return k
}

// Err is the error of the registration of the kubelet's Nodes (a zone of
// KubeletConfig.Zones that is not a label value), or nil. A kubelet that
// could not register its Nodes binds no pod to them.
func (k *Kubelet) Err() error { return k.err }

// Run calls [Kubelet.Sync] whenever a pod is written and whenever the next
// transition is due on the cluster clock, until ctx is done. Only one Run
// may be active at a time; a second one returns at once.
func (k *Kubelet) Run(ctx context.Context) {
	k.work.Running()
	k.mu.Lock()
	if k.running {
		k.mu.Unlock()
		return
	}
	k.running = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.running = false
		if k.dueT != nil {
			k.dueT.Stop()
			k.dueT = nil
		}
		k.mu.Unlock()
	}()
	for {
		k.mu.Lock()
		for !(k.woken && k.ready) {
			k.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-k.wakeC:
			}
			k.mu.Lock()
		}
		w := k.wakeW
		k.woken, k.ready, k.wakeW = false, false, clock.Work{}
		k.mu.Unlock()

		if err := k.c.enter(ctx, gate.Step{Kind: gate.StepKubelet}); err != nil {
			w.Done()
			return
		}
		next := k.Sync()

		k.mu.Lock()
		if k.dueT != nil {
			k.dueT.Stop()
			k.dueT = nil
		}
		if !next.IsZero() {
			k.dueT = k.c.clock.AfterFunc(next.Sub(k.c.clock.Now()), k.wake)
		}
		k.mu.Unlock()
		w.Done()
	}
}

// podWrittenLocked is called by the cluster, with c.mu held, after a
// write of the pod at key.
func (k *Kubelet) podWrittenLocked(key types.NamespacedName) {
	if k.syncing {
		return // Sync settles what it writes itself
	}
	k.dirty[key] = struct{}{}
	k.wake()
}

// wake makes Run call Sync again.
func (k *Kubelet) wake() {
	k.mu.Lock()
	if k.woken {
		k.mu.Unlock()
		return
	}
	k.woken = true
	var now bool
	k.wakeW, now = k.work.Start(k.release)
	k.ready = now
	k.mu.Unlock()
	if now {
		k.signal()
	}
}

// release gives a pending wake-up its turn on a deterministic clock.
func (k *Kubelet) release() {
	k.mu.Lock()
	k.ready = true
	k.mu.Unlock()
	k.signal()
}

func (k *Kubelet) signal() {
	select {
	case k.wakeC <- struct{}{}:
	default:
	}
}

// Sync brings every pod up to date with the cluster clock and returns the
// time of the next transition it knows of (zero if none). It visits only
// the pods written since the last Sync and those whose next transition is
// due, so a sync costs what changed, not what exists; the first Sync
// visits every pod. Pods are visited in namespace/name order, so a seeded
// model draws in a reproducible order. Its writes bypass fault injection.
func (k *Kubelet) Sync() time.Time {
	k.syncMu.Lock()
	defer k.syncMu.Unlock()

	c := k.c
	c.mu.Lock()
	now := c.clock.Now()
	r := c.pods
	var keys []types.NamespacedName
	if k.all {
		k.all = false
		keys = make([]types.NamespacedName, 0, len(r.objs))
		for key := range r.objs {
			keys = append(keys, key)
		}
	} else {
		keys = make([]types.NamespacedName, 0, len(k.dirty))
		for key := range k.dirty {
			keys = append(keys, key)
		}
		for len(k.dues) > 0 && !k.dues[0].at.After(now) {
			if e := k.dues.pop(); k.live(e) {
				k.pods[e.key].queued = time.Time{}
				keys = append(keys, e.key)
			}
		}
	}
	clear(k.dirty)
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	keys = slices.Compact(keys)
	// The built-in controllers react to the pass as a whole, after it:
	// what they write to pods is then new to the kubelet.
	c.holdLocked()
	k.syncing = true
	for _, key := range keys {
		p, ok := r.objs[key]
		if !ok {
			delete(k.pods, key) // deleted; its heap entry is no longer live
			continue
		}
		due := k.syncPodLocked(key, p, now)
		if _, ok := r.objs[key]; !ok {
			delete(k.pods, key) // the sync finished its deletion
			continue
		}
		if st := k.pods[key]; st != nil && !due.IsZero() && !st.queued.Equal(due) {
			st.queued = due
			k.dues.push(dueEntry{at: due, key: key})
		}
	}
	k.syncing = false
	c.releaseLocked()
	var next time.Time
	for len(k.dues) > 0 {
		if k.live(k.dues[0]) {
			next = k.dues[0].at
			break
		}
		k.dues.pop()
	}
	c.mu.Unlock()
	return next
}

// live reports whether e is the pending transition of its pod.
func (k *Kubelet) live(e dueEntry) bool {
	st := k.pods[e.key]
	return st != nil && st.queued.Equal(e.at)
}

// syncPodLocked moves one pod on and returns its next transition time.
func (k *Kubelet) syncPodLocked(key types.NamespacedName, p *corev1.Pod, now time.Time) time.Time {
	st := k.pods[key]
	if st != nil && st.uid != p.UID {
		st = nil // deleted and created again under the same name
	}
	if st == nil {
		if p.Spec.NodeName == "" && p.DeletionTimestamp != nil {
			return time.Time{}
		}
		node := slices.Index(k.nodes, p.Spec.NodeName)
		if p.Spec.NodeName != "" && node < 0 {
			return time.Time{} // bound to a node that is not ours
		}
		if node < 0 {
			if node = k.nextNodeLocked(); node < 0 {
				return time.Time{} // none of our Nodes exists: Pending until one does
			}
		}
		b := k.model(p, k.rnd)
		if f, ok := p.Annotations[FailureAnnotation]; ok {
			b.Failure = PodFailure(f)
		}
		if b.CrashAfter <= 0 {
			b.CrashAfter = 5 * time.Second
		}
		sched := p.CreationTimestamp.Time
		if sched.Before(k.started) {
			sched = k.started
		}
		k.ips++
		st = &podState{uid: p.UID, b: b, node: node, scheduledAt: sched, ip: fmt.Sprintf("10.244.%d.%d", k.ips/250, k.ips%250+2)}
		k.pods[key] = st
	}
	if st.synced && st.rv == p.ResourceVersion && (st.due.IsZero() || now.Before(st.due)) {
		return st.due
	}
	if p.DeletionTimestamp != nil {
		end := p.DeletionTimestamp.Time
		if g := p.DeletionGracePeriodSeconds; g != nil && st.b.ShutdownDelay > 0 {
			if stop := end.Add(-time.Duration(*g) * time.Second).Add(st.b.ShutdownDelay); stop.Before(end) {
				end = stop
			}
		}
		if now.Before(end) {
			return st.settle(p.ResourceVersion, end)
		}
		zero := int64(0)
		if _, _, err := k.c.pods.deleteLocked(objectKey(p), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			panic("memcluster: kubelet: " + err.Error()) // the pod exists and no precondition is set
		}
		return time.Time{}
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return st.settle(p.ResourceVersion, time.Time{})
	}
	if st.b.Failure == PodRejected {
		return k.rejectLocked(p, st)
	}
	// Only spec.nodeName and the status change, so only the status makes
	// the round trip that every stored object makes. The stored status
	// has made it too, so the two are equal exactly when they would
	// encode to the same JSON.
	status, due := k.statusAt(p, st, now)
	node := k.nodes[st.node]
	if p.Spec.NodeName == node && reflect.DeepEqual(&status, &p.Status) {
		return st.settle(p.ResourceVersion, due)
	}
	// Stored objects are never modified in place, so the new version
	// shares everything but the status with the old one.
	next := *p
	next.Spec.NodeName = node
	next.Status = status
	k.c.pods.recordUpdateLocked(p, &next, author{manager: kubeletManager, statusOnly: true}, "status") // as a kubelet's status writes are recorded
	stored := k.c.pods.commitLocked(watch.Modified, &next)
	return st.settle(stored.ResourceVersion, due)
}

// rejectLocked refuses p at admission, as a kubelet does (see
// [PodRejected]): it binds it, writes the Failed status and records the
// kubelet's event. A Failed pod changes no more.
func (k *Kubelet) rejectLocked(p *corev1.Pod, st *podState) time.Time {
	r := rejectionOf(p, st.b)
	status := rejectedStatus(p, r, st.scheduledAt)
	if k.statusNorm.normalize(&status) != nil {
		// A value the normalizer leaves to JSON (a message that is not
		// UTF-8, say).
		status = jsonRoundTrip(rejectedStatus(p, r, st.scheduledAt))
	}
	next := *p
	next.Spec.NodeName = k.nodes[st.node]
	next.Status = status
	stored := k.c.pods.commitLocked(watch.Modified, &next)
	k.c.rejectionEventLocked(stored, r, next.Spec.NodeName, st.scheduledAt)
	return st.settle(stored.ResourceVersion, time.Time{})
}

// statusAt is the status of p at now, round-tripped as a stored status
// is (see normalizer), and the time of its next change.
func (k *Kubelet) statusAt(p *corev1.Pod, st *podState, now time.Time) (corev1.PodStatus, time.Time) {
	status, due := podStatusAt(p, st, now)
	status.HostIP = fmt.Sprintf("10.0.0.%d", st.node+1)
	status.HostIPs = []corev1.HostIP{{IP: status.HostIP}}
	status.QOSClass = p.Status.QOSClass
	if k.statusNorm.normalize(&status) == nil {
		return status, due
	}
	// A value the normalizer leaves to JSON (say, an image name that is
	// not UTF-8): compute it again, as normalize may have changed it.
	status, _ = podStatusAt(p, st, now)
	status.HostIP = fmt.Sprintf("10.0.0.%d", st.node+1)
	status.HostIPs = []corev1.HostIP{{IP: status.HostIP}}
	status.QOSClass = p.Status.QOSClass
	return jsonRoundTrip(status), due
}

// jsonRoundTrip is status after encoding and decoding it as JSON.
func jsonRoundTrip(status corev1.PodStatus) corev1.PodStatus {
	b, err := json.Marshal(&status)
	if err != nil {
		panic("memcluster: kubelet: encode status: " + err.Error()) // a PodStatus always encodes
	}
	var out corev1.PodStatus
	if err := json.Unmarshal(b, &out); err != nil {
		panic("memcluster: kubelet: decode status: " + err.Error())
	}
	return out
}
