package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/shard"
)

// Sharding makes an [Operator] one of N active members of a group that
// share the cluster's namespaces: the 64-bit FNV-1a hash space of
// namespace names (the hash kube-apiserver shards lists and watches by)
// is cut into Ranges ranges, each run by one member at a time, which
// lists and watches only the Deployments, ReplicaSets and pods of its
// ranges' namespaces and writes only to them. Membership and the
// assignment are coordination.k8s.io Leases in Namespace (see package
// shard for the protocol and its guarantees). The zero value of each
// field is its default.
type Sharding struct {
	// Group names the group: the assignment Lease and the prefix of the
	// members' Leases. "" means "ctrlkit-controller".
	Group string
	// Identity names this member, unique in the group; "" means the
	// host name (a pod's name) and a random suffix. The member's Lease
	// is "<Group>-<Identity>".
	Identity string
	// Namespace holds the Leases; "" means kube-system.
	Namespace string
	// Ranges is the number of ranges, the same for every member; 0
	// means 16.
	Ranges int
	// LeaseDuration, RenewDeadline and RetryPeriod are those of
	// kube-controller-manager's leader election; 0 means 15 s, 10 s and 2 s.
	// Writes still in flight when a member stops a range it could not
	// renew have LeaseDuration-RenewDeadline to finish (Operator.Grace is
	// capped to it).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Layout chooses where the ranges start when the group is first
	// created; "" means shard.LayoutNamespaces (each range starts with
	// as many of the namespaces that exist then).
	Layout shard.Layout
	// Selector says how the informers keep to their ranges; "" means
	// SelectorAuto (server-side with a kube-apiserver that has the
	// ShardedListAndWatch gate on, client-side otherwise).
	Selector SelectorMode
}

// withDefaults fills in the defaults and checks s.
func (s Sharding) withDefaults() (Sharding, error) {
	if s.Group == "" {
		s.Group = "ctrlkit-controller"
	}
	if s.Identity == "" {
		id, err := DefaultIdentity()
		if err != nil {
			return s, err
		}
		s.Identity = id
	}
	if s.Namespace == "" {
		s.Namespace = "kube-system"
	}
	if s.Ranges == 0 {
		s.Ranges = 16
	}
	if s.LeaseDuration == 0 {
		s.LeaseDuration = 15 * time.Second
	}
	if s.RenewDeadline == 0 {
		s.RenewDeadline = 10 * time.Second
	}
	if s.RetryPeriod == 0 {
		s.RetryPeriod = 2 * time.Second
	}
	if s.Layout == "" {
		s.Layout = shard.LayoutNamespaces
	}
	switch s.Selector {
	case "":
		s.Selector = SelectorAuto
	case SelectorAuto, SelectorClient:
	default:
		return s, fmt.Errorf("kube: Sharding.Selector is %q; want %q or %q", s.Selector, SelectorAuto, SelectorClient)
	}
	if _, err := s.Layout.Cut(1, nil); err != nil {
		return s, fmt.Errorf("kube: Sharding.Layout: %w", err)
	}
	if errs := validation.IsDNS1123Subdomain(s.Namespace); len(errs) > 0 {
		return s, fmt.Errorf("kube: Sharding.Namespace %q: %s", s.Namespace, strings.Join(errs, "; "))
	}
	if err := s.config().Validate(); err != nil {
		return s, fmt.Errorf("kube: Sharding: %w", err)
	}
	return s, nil
}

func (s Sharding) config() shard.Config {
	return shard.Config{Group: s.Group, Identity: s.Identity, Ranges: s.Ranges,
		LeaseDuration: s.LeaseDuration, RenewDeadline: s.RenewDeadline, RetryPeriod: s.RetryPeriod}
}

// DefaultIdentity is a sharded member's default identity: the host name
// (in a pod, its name), lower-cased, and 6 random hex digits, so that a
// restarted process is a new member (its predecessor's Lease expires).
func DefaultIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("kube: host name for the shard identity: %w", err)
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("kube: shard identity: %w", err)
	}
	host = strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, host), "-.")
	return host + "-" + hex.EncodeToString(b), nil
}

// shardRun is what a sharded Operator run shares.
type shardRun struct {
	cfg    Sharding
	leases kubernetes.Interface
	guard  *writeGuard
	stats  *watchStats
}

// writeGuard refuses, in the controllers' transport, every write to a
// namespace the member may not write now ([shard.Member.MayWrite]).
type writeGuard struct {
	mu sync.Mutex
	m  *shard.Member
}

func (g *writeGuard) set(m *shard.Member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m = m
}

// wrap is a rest.Config WrapTransport.
func (g *writeGuard) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next.RoundTrip(req)
		}
		if ns := pathNamespace(req.URL.Path); ns != "" {
			g.mu.Lock()
			m := g.m
			g.mu.Unlock()
			if m == nil {
				return nil, errors.New("kube: the sharded member has not started: no writes")
			}
			if err := m.MayWrite(ns, time.Now()); err != nil {
				return nil, err
			}
		}
		return next.RoundTrip(req)
	})
}

// pathNamespace is the namespace of an API path (/api/v1/namespaces/NS/…
// or /apis/GROUP/VERSION/namespaces/NS/…), "" for none.
func pathNamespace(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		return rest[1]
	}
	return ""
}

// runSharded runs the operator as a member of its group: the controllers
// of each range it owns, with their own informers restricted to the
// range.
func (o *operatorRun) runSharded(ctx context.Context, dEvents, rsEvents EventRecorders) error {
	sh := o.sharding
	log := logr.FromContextOrDiscard(ctx)
	// Filtering on the client, the member's ranges share one informer
	// per resource: each event arrives once, not once per range.
	var fan *fanouts
	if sh.cfg.Selector == SelectorClient {
		var err error
		if fan, err = newFanouts(o.informers, sh.stats, log.WithName("informer")); err != nil {
			return fmt.Errorf("kube: %w", err)
		}
		fanCtx, stopFan := context.WithCancel(context.WithoutCancel(ctx))
		fanDone := make(chan error, 1)
		go func() { fanDone <- fan.run(fanCtx) }()
		defer func() { stopFan(); <-fanDone }() // after the ranges have stopped
	}
	lc := sh.leases.CoordinationV1().Leases(sh.cfg.Namespace)
	lw := typed(lc.List, lc.Watch, func(l *coordinationv1.LeaseList) ([]coordinationv1.Lease, string) { return l.Items, l.ResourceVersion })
	member, err := shard.NewMember(shard.MemberConfig{
		Config: sh.cfg.config(), Namespace: sh.cfg.Namespace, Leases: lc, Watch: lw, Layout: sh.cfg.Layout,
		Namespaces: func(ctx context.Context) ([]string, error) {
			l, err := sh.leases.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			names := make([]string, len(l.Items))
			for i, ns := range l.Items {
				names[i] = ns.Name
			}
			return names, nil
		},
		RunRange: func(ctx context.Context, st shard.Start) error {
			f := newRangeFilter(shard.MustSet(st.Range), sh.cfg.Selector, sh.stats)
			f.fan = fan
			rlog := log.WithValues("range", st.Index, "hashes", st.Range.String())
			return o.runControllers(logr.NewContext(ctx, rlog), dEvents, rsEvents, f, rangeOwner(st.Index))
		},
		OnEvent: func(e shard.Event) {
			if m := o.metrics; m != nil {
				m.shardEvent(e)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	sh.guard.set(member)
	if m := o.metrics; m != nil {
		m.setShard(member.Owned, sh.stats)
	}
	log.Info("Joining the sharded group", "group", sh.cfg.Group, "identity", sh.cfg.Identity, "ranges", sh.cfg.Ranges,
		"leaseNamespace", sh.cfg.Namespace, "selector", sh.cfg.Selector)
	return member.Run(ctx)
}
