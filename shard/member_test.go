package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/shard"
)

// killable is a Lease client that fails every request once killed, as a
// process that died would make none.
type killable struct {
	shard.LeaseClient
	mu   sync.Mutex
	dead bool
}

var errKilled = errors.New("killed")

func (k *killable) alive() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return errKilled
	}
	return nil
}

func (k *killable) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := k.alive(); err != nil {
		return nil, err
	}
	return k.LeaseClient.Get(ctx, name, o)
}

func (k *killable) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := k.alive(); err != nil {
		return nil, err
	}
	return k.LeaseClient.Create(ctx, l, o)
}

func (k *killable) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := k.alive(); err != nil {
		return nil, err
	}
	return k.LeaseClient.Update(ctx, l, o)
}

func (k *killable) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := k.alive(); err != nil {
		return err
	}
	return k.LeaseClient.Delete(ctx, name, o)
}

// write is one write a range made.
type write struct {
	member, ns string
	at         time.Duration
}

// group runs members on one in-memory cluster; each range they run
// writes to each of its namespaces every half second (through MayWrite).
type group struct {
	t          *testing.T
	leases     *memcluster.Resource[*coordinationv1.Lease]
	start      time.Time
	namespaces []string
	mu         sync.Mutex
	writes     []write
	members    map[string]*shard.Member
	clients    map[string]*killable
	stop       map[string]context.CancelFunc
	done       map[string]chan error
}

func newGroup(t *testing.T) *group {
	c := memcluster.New(memcluster.Config{Seed: 1})
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	k, err := memcluster.KindFor(s, &coordinationv1.Lease{}, memcluster.KindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := &group{t: t, leases: memcluster.NewResource(c, k), start: time.Now(), members: map[string]*shard.Member{},
		clients: map[string]*killable{}, stop: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	for i := range 40 {
		g.namespaces = append(g.namespaces, fmt.Sprintf("team-%d-prod", i))
	}
	return g
}

func (g *group) add(id string) {
	client := &killable{LeaseClient: g.leases.Namespace("kube-system")}
	var m *shard.Member
	m, err := shard.NewMember(shard.MemberConfig{
		Config: shard.Config{Group: "ctl", Identity: id, Ranges: 8,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Namespace: "kube-system", Leases: client, Watch: g.leases.Namespace("kube-system").ListWatcher(),
		Layout: shard.LayoutNamespaces, Namespaces: func(context.Context) ([]string, error) { return g.namespaces, nil },
		RunRange: func(ctx context.Context, st shard.Start) error {
			set := shard.MustSet(st.Range)
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(500 * time.Millisecond):
				}
				if client.alive() != nil {
					<-ctx.Done() // a dead process writes nothing
					return nil
				}
				for _, ns := range g.namespaces {
					if set.ContainsNamespace(ns) && m.MayWrite(ns, time.Now()) == nil {
						g.mu.Lock()
						g.writes = append(g.writes, write{id, ns, time.Since(g.start)})
						g.mu.Unlock()
					}
				}
			}
		},
	})
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(g.t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	g.members[id], g.clients[id], g.stop[id], g.done[id] = m, client, cancel, done
}

// owners returns, per range index, the members that run it.
func (g *group) owners() map[int][]string {
	out := map[int][]string{}
	for id, m := range g.members {
		for i := range m.Owned() {
			out[i] = append(out[i], id)
		}
	}
	return out
}

// balanced reports whether every range runs once, on n members.
func (g *group) balanced(n int) bool {
	o := g.owners()
	per := map[string]int{}
	for i := range 8 {
		if len(o[i]) != 1 {
			return false
		}
		per[o[i][0]]++
	}
	return len(per) == n
}

// waitFor advances virtual time by steps of 100 ms until cond holds, and
// returns how long that took.
func (g *group) waitFor(what string, cond func() bool, limit time.Duration) time.Duration {
	g.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			g.t.Fatalf("%s: not after %v; owners %v", what, limit, g.owners())
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
	}
	return time.Since(start)
}

// overlaps returns the namespaces written by two members in overlapping
// intervals (each member's writes to a namespace as one interval per
// stretch without a gap of more than 2 s).
func (g *group) overlaps() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	type span struct {
		member   string
		from, to time.Duration
	}
	spans := map[string][]span{}
	for _, w := range g.writes {
		ss := spans[w.ns]
		if n := len(ss); n > 0 && ss[n-1].member == w.member && w.at-ss[n-1].to <= 2*time.Second {
			ss[n-1].to = w.at
		} else {
			ss = append(ss, span{w.member, w.at, w.at})
		}
		spans[w.ns] = ss
	}
	var out []string
	for ns, ss := range spans {
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				a, b := ss[i], ss[j]
				if a.member != b.member && a.from <= b.to && b.from <= a.to {
					out = append(out, fmt.Sprintf("%s: %s %v-%v and %s %v-%v", ns, a.member, a.from, a.to, b.member, b.from, b.to))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestMemberGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		for _, id := range []string{"a", "b", "c"} {
			g.add(id)
		}
		g.waitFor("3 members balanced", func() bool { return g.balanced(3) }, time.Minute)

		// Kill a: its ranges move once its Lease has expired.
		g.clients["a"].mu.Lock()
		g.clients["a"].dead = true
		g.clients["a"].mu.Unlock()
		took := g.waitFor("a's ranges moved to b and c", func() bool {
			o := g.owners()
			for i := range 8 {
				if len(o[i]) != 1 || o[i][0] == "a" {
					return false
				}
			}
			return true
		}, time.Minute)
		t.Logf("a killed: its ranges moved after %v", took)
		if took > 17*time.Second {
			t.Errorf("a's ranges moved %v after it was killed; want within the lease duration + 2 s", took)
		}
		g.stop["a"]()
		<-g.done["a"]
		delete(g.members, "a")

		// A fourth joins, then b leaves gracefully: its ranges move at once.
		g.add("d")
		g.waitFor("b, c, d balanced", func() bool { return g.balanced(3) }, time.Minute)
		g.stop["b"]()
		if err := <-g.done["b"]; err != nil {
			t.Fatalf("b left with %v", err)
		}
		delete(g.members, "b")
		took = g.waitFor("c and d balanced", func() bool { return g.balanced(2) }, time.Minute)
		t.Logf("b left: its ranges moved after %v", took)
		if took > 5*time.Second {
			t.Errorf("b's ranges moved %v after it left; want within a few seconds", took)
		}
		if o := g.overlaps(); len(o) > 0 {
			t.Errorf("namespaces written by two members at once:\n%v", o)
		}
		for id, stop := range g.stop {
			stop()
			if _, ok := g.members[id]; ok {
				<-g.done[id]
			}
		}
	})
}
