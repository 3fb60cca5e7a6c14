package shard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/informer"
)

// LeaseReader reads one Lease.
type LeaseReader interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
}

// LeaseWriter writes Leases.
type LeaseWriter interface {
	Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// LeaseClient reads and writes the Leases of one namespace: client-go's
// typed client (clientset.CoordinationV1().Leases(ns)) and memcluster's
// (cluster.Leases(ns)) are both one.
type LeaseClient interface {
	LeaseReader
	LeaseWriter
}

// MemberConfig configures a [Member].
type MemberConfig struct {
	Config
	// Namespace holds the group's Leases. Required.
	Namespace string
	// Leases reads and writes them. Required.
	Leases LeaseClient
	// Watch lists and watches the Leases of Namespace (at least the
	// group's). Required.
	Watch informer.ListWatcher[*coordinationv1.Lease]
	// Layout cuts the hash space when this member creates the group's
	// record; "" means [LayoutNamespaces]. Namespaces lists the cluster's
	// namespaces for it; nil means [LayoutEven].
	Layout     Layout
	Namespaces func(ctx context.Context) ([]string, error)
	// RunRange runs the controllers of one range until ctx is done, then
	// returns once none of its writes can land any more: when it returns
	// the range may start elsewhere. Its error is logged and the range
	// started again a retry period later. Required.
	RunRange func(ctx context.Context, r Start) error
	// Clock drives renewals and expiries; nil means the real clock. The
	// member's own goroutine does not report its work to a *clock.Fake:
	// run it on the real clock, or inside a testing/synctest bubble for
	// virtual time.
	Clock clock.Clock
	// OnEvent, if set, is told what the member does (see [Event]), from
	// its goroutine. It must be quick.
	OnEvent func(Event)
	// Incarnation tells this process's renewals from another's; "" means
	// a random token.
	Incarnation string
}

// EventType is what happened to a member.
type EventType string

// The events of a member.
const (
	EventStarted  EventType = "Started"  // a range started
	EventStopped  EventType = "Stopped"  // a range stopped (Detail: why)
	EventReleased EventType = "Released" // a stopped range was released in the record
	EventProblem  EventType = "Problem"  // something to say (Detail)
)

// Event is one thing a member did.
type Event struct {
	Type   EventType
	Range  int // -1 for none
	Detail string
	Time   time.Time
}

// Member is one member of a group: it renews its Lease, follows the
// group's assignment and runs the ranges it owns ([MemberConfig.RunRange])
// in the goroutine of [Member.Run]. Build it with [NewMember].
type Member struct {
	cfg  MemberConfig
	clk  clock.Clock
	core *Core

	mu       sync.Mutex
	running  map[int]*ownedRange // for Owned and MayWrite
	deadline time.Time           // the renew deadline of the last renewal
}

// ownedRange is a range that runs here.
type ownedRange struct {
	r      Range
	fenced bool // stopped without a release: no write any more
}

// NewMember checks cfg and returns its member. It starts nothing.
func NewMember(cfg MemberConfig) (*Member, error) {
	switch {
	case cfg.Namespace == "":
		return nil, errors.New("shard: MemberConfig.Namespace is empty")
	case cfg.Leases == nil || cfg.Watch == nil:
		return nil, errors.New("shard: MemberConfig needs Leases and Watch")
	case cfg.RunRange == nil:
		return nil, errors.New("shard: MemberConfig.RunRange is nil")
	}
	if cfg.Layout == "" {
		cfg.Layout = LayoutNamespaces
	}
	if _, err := cfg.Layout.Cut(1, nil); err != nil {
		return nil, err
	}
	core, err := NewCore(cfg.Config)
	if err != nil {
		return nil, err
	}
	if cfg.Incarnation == "" {
		cfg.Incarnation = fmt.Sprintf("%016x", rand.Uint64())
	}
	return &Member{cfg: cfg, clk: clock.OrReal(cfg.Clock), core: core, running: map[int]*ownedRange{}}, nil
}

// Owned returns the ranges the member runs now (those it stops
// included), by index.
func (m *Member) Owned() map[int]Range {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]Range, len(m.running))
	for i, r := range m.running {
		out[i] = r.r
	}
	return out
}

// MayWrite reports, as an error, why this member may not write objects of
// namespace ns now; nil when it may: a range it runs holds the namespace,
// it was not stopped for a fence, and the member's Lease was renewed
// within the renew deadline. Put it in front of every write of the
// ranges' controllers (ctrlkit's kube.Operator does, in its clients'
// transport): it is the fence that keeps a member that lost its Lease (a
// paused process, a partition) from writing after another took over.
func (m *Member) MayWrite(ns string, now time.Time) error {
	h := Hash(ns)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !now.Before(m.deadline) {
		return fmt.Errorf("shard: member %s: its Lease was not renewed within the renew deadline (%v): no writes", m.cfg.Identity, m.cfg.RenewDeadline)
	}
	for _, r := range m.running {
		if r.r.Contains(h) {
			if r.fenced {
				return fmt.Errorf("shard: member %s: the range %s of namespace %s was stopped: no writes", m.cfg.Identity, r.r, ns)
			}
			return nil
		}
	}
	return fmt.Errorf("shard: member %s does not own namespace %s (hash 0x%016x)", m.cfg.Identity, ns, h)
}

// rangeRun is one range's goroutine.
type rangeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Run takes part in the group until ctx is done: it stops its ranges
// (each RunRange returns), releases them in the record and deletes its
// Lease, so that the others take them at once; then it returns nil. It
// returns an error wrapping [ErrFatal] at once (after stopping its
// ranges) when it cannot go on: another process with its identity, or a
// group cut into another number of ranges. The logger comes from ctx.
func (m *Member) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("group", m.cfg.Group, "member", m.cfg.Identity)
	infCtx, stopInf := context.WithCancel(ctx)
	defer stopInf()
	inf := informer.New(m.cfg.Watch, informer.Config[*coordinationv1.Lease]{Clock: m.clk, Logger: log})
	poke := make(chan struct{}, 1)
	signal := func() {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddHandler(informer.Handler[*coordinationv1.Lease]{
		OnAdd:    func(*coordinationv1.Lease) { signal() },
		OnUpdate: func(_, _ *coordinationv1.Lease) { signal() },
		OnDelete: func(informer.Deleted[*coordinationv1.Lease]) { signal() },
	}); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	infDone := make(chan error, 1)
	go func() { infDone <- inf.Run(infCtx) }()
	select {
	case <-inf.Synced():
	case <-ctx.Done():
		stopInf()
		<-infDone
		return nil
	case err := <-infDone:
		return fmt.Errorf("shard: the Lease informer stopped: %w", err)
	}
	s := &session{m: m, log: log, inf: inf, runs: map[int]*rangeRun{}, stopped: make(chan int, m.cfg.Ranges)}
	err := s.loop(ctx, poke)
	s.stopAll()
	if err == nil {
		s.leave(context.WithoutCancel(ctx))
	}
	stopInf()
	<-infDone
	return err
}

// session is one run of a member.
type session struct {
	m       *Member
	log     logr.Logger
	inf     *informer.Informer[*coordinationv1.Lease]
	runs    map[int]*rangeRun
	stopped chan int
	own     *coordinationv1.Lease // this member's Lease as last written
}

func (s *session) event(t EventType, r int, detail string) {
	if f := s.m.cfg.OnEvent; f != nil {
		f(Event{Type: t, Range: r, Detail: detail, Time: s.m.clk.Now()})
	}
}

func (s *session) loop(ctx context.Context, poke <-chan struct{}) error {
	m, core := s.m, s.m.core
	for {
		if ctx.Err() != nil {
			return nil // its requests would fail at once: none is sent
		}
		now := m.clk.Now()
		leases, err := s.inf.Cache().List(m.cfg.Namespace, labels.SelectorFromSet(labels.Set{LabelGroup: m.cfg.Group}))
		if err != nil {
			return fmt.Errorf("shard: %w", err)
		}
		core.Observe(leases, now)
		p := core.Decide(now)
		for _, pr := range p.Problems {
			s.log.Error(errors.New(pr), "Sharding problem")
			s.event(EventProblem, -1, pr)
		}
		for _, st := range p.Stop {
			s.log.Info("Stopping range", "range", st.Index, "reason", st.Reason)
			if !st.Release {
				m.mu.Lock()
				if r := m.running[st.Index]; r != nil {
					r.fenced = true // before its context ends: no write from now on
				}
				m.mu.Unlock()
			}
			if r := s.runs[st.Index]; r != nil {
				r.cancel()
			}
		}
		if p.Fatal != nil {
			return p.Fatal
		}
		again := false
		if p.Renew {
			s.renew(ctx, now)
			again = true
		}
		switch {
		case p.ReadRecord:
			s.readRecord(ctx, now)
			again = true
		case len(p.Verify) > 0:
			s.verify(ctx, p.Verify, now)
			again = true
		case p.CreateRecord || p.ResetRecord:
			s.writeLayout(ctx, p.ResetRecord, p.WriteVersion, now)
			again = true
		case p.Write != nil:
			s.write(ctx, *p.Write, p.WriteVersion, now)
			again = true
		}
		for _, st := range p.Start {
			s.start(ctx, st)
		}
		for _, d := range p.Delete {
			err := m.cfg.Leases.Delete(ctx, d.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &d.ResourceVersion}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				s.log.Error(err, "Deleting the Lease of a member gone", "lease", d.Name)
			}
		}
		if again {
			continue
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if !p.Wake.IsZero() {
			timer = m.clk.NewTimer(p.Wake.Sub(now))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-poke:
		case i := <-s.stopped:
			s.reap(i)
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (s *session) start(ctx context.Context, st Start) {
	rctx, cancel := context.WithCancel(ctx)
	r := &rangeRun{cancel: cancel, done: make(chan struct{})}
	s.runs[st.Index] = r
	s.m.mu.Lock()
	s.m.running[st.Index] = &ownedRange{r: st.Range}
	s.m.mu.Unlock()
	s.log.Info("Starting range", "range", st.Index, "hashes", st.Range.String())
	s.event(EventStarted, st.Index, st.Range.String())
	go func() {
		defer close(r.done)
		r.err = s.m.cfg.RunRange(rctx, st)
		s.stopped <- st.Index
	}()
}

// reap takes the end of range i.
func (s *session) reap(i int) {
	r := s.runs[i]
	if r == nil {
		return
	}
	<-r.done
	delete(s.runs, i)
	s.m.mu.Lock()
	delete(s.m.running, i)
	s.m.mu.Unlock()
	now := s.m.clk.Now()
	detail := "stopped"
	if r.err != nil {
		detail = r.err.Error()
		s.log.Error(r.err, "Range stopped", "range", i)
		s.m.core.WriteFailed(now) // start it again a retry period later
	}
	s.event(EventStopped, i, detail)
	s.m.core.Stopped(i)
}

// stopAll stops every range and waits for them.
func (s *session) stopAll() {
	for _, r := range s.runs {
		r.cancel()
	}
	for len(s.runs) > 0 {
		s.reap(<-s.stopped)
	}
}
