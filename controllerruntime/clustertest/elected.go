package clustertest

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// LeaseNamespace is where the Leases of [Cluster.StartLeaderElected]
// are.
const LeaseNamespace = "kube-system"

// elected is what StartLeaderElected started: instances of one operator
// electing a leader on one Lease.
type elected struct {
	c     *Cluster
	id    string
	opts  manager.Options
	setup func(mgr manager.Manager) error

	mu      sync.Mutex
	leader  string   // the client (and identity) of the instance that leads, "" if none
	clients []string // every instance's client, restarted ones too
}

// StartLeaderElected runs instances (at least two) of an operator with
// controller-runtime's leader election, as replicas of its Deployment
// would run: each a Manager of its own ([Cluster.NewManager]'s, with
// opts, and LeaderElection on a Lease named id in namespace
// [LeaseNamespace]), set up by setup (add your controllers there), all
// started at once. One acquires the Lease and runs the controllers; the
// others wait, and take over once its lease has expired (15 s of virtual
// time by default: opts.LeaseDuration, RenewDeadline and RetryPeriod
// apply). An instance that loses the Lease stops, as controller-runtime
// stops a Manager ("leader election lost"), and starts again as a
// standby, as its pod would restart: setup runs again on a new Manager.
//
// Each instance's identity in the Lease is its client's name in the
// trace ("manager", "manager#2", then "manager#3" for the first
// restarted). With [PerturbHandover] an exploring seed stalls the leader
// at some step, so that another takes over; [LeaderOnlyWrites] checks
// that no instance writes without holding the Lease.
func (c *Cluster) StartLeaderElected(id string, instances int, opts manager.Options, setup func(mgr manager.Manager) error) {
	c.t.Helper()
	if id == "" || instances < 1 {
		c.t.Fatalf("clustertest: StartLeaderElected needs a Lease name and at least one instance (got %q, %d)", id, instances)
	}
	g := &elected{c: c, id: id, opts: opts, setup: setup}
	c.sched.mu.Lock()
	c.sched.elected = append(c.sched.elected, g)
	c.sched.mu.Unlock()
	var mgrs []manager.Manager
	var names []string
	for range instances {
		mgr, name, err := g.newInstance()
		if err != nil {
			c.t.Fatalf("clustertest: %v", err)
		}
		mgrs, names = append(mgrs, mgr), append(names, name)
	}
	for i := range mgrs {
		c.wg.Go(func() { g.run(mgrs[i], names[i]) })
	}
}

// newInstance builds and sets up one instance's Manager.
func (g *elected) newInstance() (manager.Manager, string, error) {
	c := g.c
	name := c.names.next("manager")
	cfg := namedConfig(c.cfg, name)
	leases, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	opts := g.opts
	opts.LeaderElectionID, opts.LeaderElectionNamespace = g.id, LeaseNamespace
	opts.LeaderElectionResourceLockInterface = &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: LeaseNamespace, Name: g.id},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: name},
	}
	mgr, err := c.newManagerNamed(opts, cfg, true)
	if err != nil {
		return nil, "", fmt.Errorf("manager %s: %w", name, err)
	}
	if err := g.setup(mgr); err != nil {
		return nil, "", fmt.Errorf("manager %s: setup: %w", name, err)
	}
	g.mu.Lock()
	g.clients = append(g.clients, name)
	g.mu.Unlock()
	return mgr, name, nil
}

// run runs an instance, and its successors once it loses the Lease,
// until the test ends.
func (g *elected) run(mgr manager.Manager, name string) {
	c := g.c
	for {
		done := make(chan struct{})
		c.wg.Go(func() {
			select {
			case <-mgr.Elected():
				g.mu.Lock()
				g.leader = name
				g.mu.Unlock()
				c.rec.note(fmt.Sprintf("%s leads (lease %s/%s)", name, LeaseNamespace, g.id))
			case <-done:
			}
		})
		err := mgr.Start(c.ctx)
		close(done)
		g.mu.Lock()
		if g.leader == name {
			g.leader = ""
		}
		g.mu.Unlock()
		if c.ctx.Err() != nil {
			return
		}
		if err == nil || !strings.Contains(err.Error(), "leader election lost") {
			c.fail(fmt.Errorf("clustertest: %s (leader-elected %s) stopped: %v", name, g.id, err))
			return
		}
		c.rec.note(fmt.Sprintf("%s lost the lease %s/%s: it stops and starts again as a standby", name, LeaseNamespace, g.id))
		var berr error
		if mgr, name, berr = g.newInstance(); berr != nil {
			c.fail(fmt.Errorf("clustertest: restart after a lost lease: %w", berr))
			return
		}
	}
}

// leaderClient is the client of the instance that leads, or "".
func (g *elected) leaderClient() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leader
}

func (g *elected) isInstance(client string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.clients {
		if n == client {
			return true
		}
	}
	return false
}

// LeaderOnlyWrites fails when an instance of [Cluster.StartLeaderElected]
// writes (anything but Leases and Events) while the Lease names another
// holder: the classic mistake of a leader that goes on writing after
// losing its lease (a goroutine, or a request, that outlives the
// Manager's context, so that it lands after another instance took over).
func LeaderOnlyWrites() Property {
	return Property{Name: "only the leader writes", Always: func(s *State) error {
		s.c.sched.mu.Lock()
		groups := s.c.sched.elected
		s.c.sched.mu.Unlock()
		var errs []error
		for _, w := range s.writes {
			if w.Resource == "leases" || w.Resource == "events" || w.By == "" {
				continue
			}
			for _, g := range groups {
				if !g.isInstance(w.By) {
					continue
				}
				holder := ""
				if l, ok := s.Get("leases", LeaseNamespace, g.id).(*coordinationv1.Lease); ok && l.Spec.HolderIdentity != nil {
					holder = *l.Spec.HolderIdentity
				}
				if holder != w.By {
					errs = append(errs, fmt.Errorf("%s %s %s written by %s, but the lease %s/%s is held by %q",
						strings.ToLower(string(w.Type)), w.Resource, keyText(w.Object.GetNamespace(), w.Object.GetName()), w.By, LeaseNamespace, g.id, holder))
				}
			}
		}
		return errors.Join(errs...)
	}}
}
