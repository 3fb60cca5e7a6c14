package memcluster

import (
	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/admit"
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FaultRule injects errors and latency into matching requests.
type FaultRule struct {
	// Verb matches one verb, kube-apiserver's name for it: "get", "list",
	// "watch", "create", "update", "patch", "delete", or "update/status"
	// for a write of the status subresource (an update or a patch of it);
	// "" matches every verb. Any other verb makes [Cluster.SetFaults]
	// return an error.
	Verb string
	// Resource matches one kind by its plural name ("pods"); "" matches all.
	Resource string
	// Rate is the probability, in [0, 1], that a matching request fails;
	// [Cluster.SetFaults] refuses a rate outside.
	Rate float64
	// Reason is the reason of the error a failing request returns, an
	// *apierrors.StatusError that the usual apierrors predicates classify:
	// metav1.StatusReasonInternalError (a 500; "" means it),
	// StatusReasonServiceUnavailable (503), StatusReasonConflict (409),
	// StatusReasonServerTimeout (a 500 with a Retry-After of 1 s) or
	// StatusReasonTooManyRequests (429, Retry-After 1 s). Any other reason
	// is returned with code 500.
	Reason metav1.StatusReason
	// AfterWrite makes a failing request take effect before the error is
	// returned, like a response lost on the way back: the client sees an
	// error although the write happened.
	AfterWrite bool
	// Latency delays every matching request by this much time on the
	// cluster's clock (virtual under a fake clock).
	Latency time.Duration
}

// Faults is the fault-injection configuration of a cluster. The zero
// value injects nothing. Random choices come from a source seeded with
// [Config.Seed], so the same faults hit the same requests when a test
// makes the same requests in the same order.
type Faults struct {
	// Rules are matched in order. Latencies of all matching rules add up;
	// the first matching rule whose draw fails decides the error.
	Rules []FaultRule
	// WatchLag delays the delivery of every watch event by this much
	// cluster time: an informer behind the API.
	WatchLag time.Duration
	// WatchDropRate is the probability, per watch event, that the watch
	// ends instead of delivering it; clients must watch again.
	WatchDropRate float64
	// ListCatchUp makes a consistent list (no resourceVersion, no continue
	// token) wait as kube-apiserver v1.37's does for the watch cache of its
	// kind, which learns of a write to another kind only from etcd's next
	// progress notification: when the latest write was not of the listed
	// kind, the list is served no earlier than ListCatchUp after that
	// write (after any injected latency). About 95 ms on envtest; zero
	// (the default) serves every list at once.
	ListCatchUp time.Duration
}

// SetFaults replaces the fault configuration; it applies to requests and
// watch events from now on. It returns an error naming the first bad rule
// (a verb not listed on [FaultRule.Verb], a rate outside [0, 1], a
// negative latency or watch lag) and then keeps the configuration it had.
func (c *Cluster) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	c.faults.cfg = f
	return nil
}

func (f Faults) validate() error {
	for i, r := range f.Rules {
		if r.Verb != "" && !gate.KnownVerb(gate.Verb(r.Verb)) {
			return fmt.Errorf("memcluster: fault rule %d (verb %q, resource %q): unknown verb %q", i, r.Verb, r.Resource, r.Verb)
		}
		if !(r.Rate >= 0 && r.Rate <= 1) {
			return fmt.Errorf("memcluster: fault rule %d (verb %q, resource %q): rate %v outside [0, 1]", i, r.Verb, r.Resource, r.Rate)
		}
		if r.Latency < 0 {
			return fmt.Errorf("memcluster: fault rule %d (verb %q, resource %q): negative latency %v", i, r.Verb, r.Resource, r.Latency)
		}
	}
	if !(f.WatchDropRate >= 0 && f.WatchDropRate <= 1) {
		return fmt.Errorf("memcluster: fault WatchDropRate %v outside [0, 1]", f.WatchDropRate)
	}
	if f.WatchLag < 0 {
		return fmt.Errorf("memcluster: fault WatchLag %v is negative", f.WatchLag)
	}
	if f.ListCatchUp < 0 {
		return fmt.Errorf("memcluster: fault ListCatchUp %v is negative", f.ListCatchUp)
	}
	return nil
}

type faultInjector struct {
	mu  sync.Mutex
	rnd *rand.Rand
	cfg Faults
}

func (fi *faultInjector) init(seed uint64) {
	fi.rnd = rand.New(rand.NewPCG(seed, 0x6661756c7473))
}

// decide returns the latency and the failing rule (if any) for a request.
func (fi *faultInjector) decide(verb gate.Verb, resource string) (time.Duration, *FaultRule) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	var lat time.Duration
	var hit *FaultRule
	for i := range fi.cfg.Rules {
		rule := &fi.cfg.Rules[i]
		if (rule.Verb != "" && rule.Verb != string(verb)) || (rule.Resource != "" && rule.Resource != resource) {
			continue
		}
		lat += rule.Latency
		if rule.Rate > 0 && fi.rnd.Float64() < rule.Rate && hit == nil {
			r := *rule
			hit = &r
		}
	}
	return lat, hit
}

// listCatchUp is the configured Faults.ListCatchUp.
func (fi *faultInjector) listCatchUp() time.Duration {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.cfg.ListCatchUp
}

// waitForWatchCache waits, for a consistent list of gr, until gr's watch
// cache has caught up with the cluster's latest write (see
// Faults.ListCatchUp), and lets the gate order the list again.
func (c *Cluster) waitForWatchCache(ctx context.Context, gr schema.GroupResource, namespace string, opts metav1.ListOptions) error {
	if opts.ResourceVersion != "" || opts.Continue != "" || admit.IsLoopback(ctx) {
		return nil // served from the cache as it is, or from a snapshot
	}
	catchUp := c.faults.listCatchUp()
	if catchUp == 0 {
		return nil
	}
	c.mu.Lock()
	fresh := c.lists.Fresh(gr.String(), catchUp)
	c.mu.Unlock()
	d := fresh.Sub(c.clock.Now())
	if fresh.IsZero() || d <= 0 {
		return nil
	}
	if err := clock.Sleep(ctx, c.clock, d); err != nil {
		return err
	}
	return c.enter(ctx, gate.Step{Kind: gate.StepRequest, Verb: gate.VerbList, Resource: gr.Resource, Namespace: namespace})
}

// watchDelivery returns the lag of one watch event and whether the watch
// is dropped instead.
func (fi *faultInjector) watchDelivery() (time.Duration, bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	drop := fi.cfg.WatchDropRate > 0 && fi.rnd.Float64() < fi.cfg.WatchDropRate
	return fi.cfg.WatchLag, drop
}

// admit runs before every request: it counts the request, waits for any
// injected latency, and decides the injected error. err fails the request
// before it takes effect; after is returned once it has taken effect.
//
// Injected latency waits on the cluster clock with [clock.Sleep]: on a fake
// clock the caller must be doing tracked work (a controller's sync, an
// informer's list), as every request of a simulated controller is.
func (c *Cluster) admit(ctx context.Context, verb gate.Verb, gr schema.GroupResource, namespace, name string) (after, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if admit.IsLoopback(ctx) {
		return nil, nil // the cluster's own reads: no gate, no faults
	}
	step := gate.Step{Kind: gate.StepRequest, Verb: verb, Resource: gr.Resource, Namespace: namespace, Name: name}
	if err := c.enter(ctx, step); err != nil {
		return nil, err
	}
	lat, rule := c.faults.decide(verb, gr.Resource)
	c.requested(ctx, Request{Verb: string(verb), Resource: gr.Resource, Namespace: namespace, Name: name, Latency: lat, Fault: rule})
	if lat > 0 {
		if err := clock.Sleep(ctx, c.clock, lat); err != nil {
			return nil, err
		}
		// Requests delayed alike wake together: the gate orders them again.
		if err := c.enter(ctx, step); err != nil {
			return nil, err
		}
	}
	if rule == nil {
		return nil, nil
	}
	fault := injected(rule.Reason, verb, gr, name)
	if rule.AfterWrite {
		return fault, nil
	}
	return nil, fault
}

// injected returns the error of a request failed by a rule of reason.
func injected(reason metav1.StatusReason, verb gate.Verb, gr schema.GroupResource, name string) error {
	cause := errors.New("memcluster: injected fault")
	switch reason {
	case "", metav1.StatusReasonInternalError:
		return apierrors.NewInternalError(cause)
	case metav1.StatusReasonServiceUnavailable:
		return apierrors.NewServiceUnavailable(cause.Error())
	case metav1.StatusReasonConflict:
		return apierrors.NewConflict(gr, name, cause)
	case metav1.StatusReasonServerTimeout:
		return apierrors.NewServerTimeout(gr, string(verb), 1)
	case metav1.StatusReasonTooManyRequests:
		return apierrors.NewTooManyRequests(cause.Error(), 1)
	default:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: reason, Message: cause.Error()}}
	}
}
