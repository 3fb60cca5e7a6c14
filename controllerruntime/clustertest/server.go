package clustertest

import (
	"errors"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Server is the cluster of [Test] for code that does not run inside
// Test's function: a TestMain of a client-go operator starts one and runs
// its controller against [Server.Config]; package controllerruntime/envtest
// builds its envtest-shaped Environment on it.
//
// Started outside any synctest bubble, it runs on the wall clock: a
// RequeueAfter of an hour takes an hour, and the order of what happens at
// once may differ from run to run (as Options.Concurrent says). Started
// inside a bubble (envtest.RunSpecs runs a Ginkgo suite in one), it runs
// on the bubble's virtual clock, its steps one at a time in the canonical
// order as in [Test] (unless Options.Concurrent), so that the same suite
// with the same seed makes the same trace.
//
// Create it with [NewServer]; Stop ends everything it started.
type Server struct {
	mu sync.Mutex // serialises Stop
	c  *Cluster
}

// NewServer starts a cluster as opts says and returns it: on the wall
// clock, or on the virtual clock of the synctest bubble it is called in.
// Its built-in controllers run as opts.Disable leaves them (all of them by
// default, as in [Test]). On the wall clock the steps of the cluster
// happen as their goroutines run (opts.Concurrent is implied). Interleave,
// Schedule and Perturb, which explore orderings, are [Explore]'s and
// [Test]'s: a Server refuses them.
//
// The kubelet's default model takes seconds, which on the wall clock are
// wall-clock seconds: a pod starts and becomes ready a second or two after
// its creation, and a deleted pod lingers for its grace period (30 s by
// default). For pods that come and go at once, as envtest-shaped suites
// expect, set Options.Kubelet.Model to
// memcluster.FixedModel(memcluster.PodBehavior{ShutdownDelay: time.Millisecond}).
func NewServer(opts Options) (*Server, error) {
	if opts.Interleave || opts.Schedule != "" {
		return nil, errors.New("clustertest: a Server does not explore orderings: Options.Interleave and Options.Schedule are Test's")
	}
	if opts.Perturb != 0 {
		return nil, errors.New("clustertest: a Server does not explore orderings: Options.Perturb is Test's")
	}
	virtual := bubble.Current() != 0
	if !virtual {
		opts.Concurrent = true
	}
	c, err := start(nil, opts, virtual)
	if err != nil {
		return nil, err
	}
	return &Server{c: c}, nil
}

// cluster is the cluster, or nil for a nil Server.
func (s *Server) cluster() *Cluster {
	if s == nil {
		return nil
	}
	return s.c
}

// Config returns a rest.Config for the cluster, as [Cluster.Config] does:
// each call returns a new copy, whose clients the trace names "config",
// "config#2", and so on.
func (s *Server) Config() *rest.Config {
	c := s.cluster()
	if c == nil {
		return nil
	}
	return c.Config()
}

// Stop stops the cluster and everything it runs, and returns what went
// wrong in the cluster's own components. A second Stop does nothing. What
// happened stays readable: Describe, Trace and Check work after Stop.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	s.mu.Lock() // shutdown is not safe for concurrent use
	defer s.mu.Unlock()
	return errors.Join(s.c.shutdown()...)
}

// Describe says what is stuck, as [Cluster.RunUntil] does when it gives
// up (on the wall clock without the blocked workers: those are told from
// a bubble's goroutines), for a suite to print when a poll gives up.
func (s *Server) Describe() string {
	if c := s.cluster(); c != nil {
		return c.describe()
	}
	return ""
}

// Trace is [Cluster.Trace]: what happened, with the times since the
// start. On the wall clock it differs from run to run; in a bubble the
// same run (same seed, same order of specs) gives the same trace.
func (s *Server) Trace() []string {
	if c := s.cluster(); c != nil {
		return c.Trace()
	}
	return nil
}

// Check is [Cluster.Check].
func (s *Server) Check() error {
	if c := s.cluster(); c != nil {
		return c.Check()
	}
	return nil
}

// SetFaults is [Cluster.SetFaults].
func (s *Server) SetFaults(f memcluster.Faults) error {
	c := s.cluster()
	if c == nil {
		return errors.New("clustertest: SetFaults on a nil Server")
	}
	return c.SetFaults(f)
}

// Memcluster is [Cluster.Memcluster].
func (s *Server) Memcluster() *memcluster.Cluster {
	if c := s.cluster(); c != nil {
		return c.mc
	}
	return nil
}
