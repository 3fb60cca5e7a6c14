package clustertest

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// probe is the testing.TB an explored scenario gets: a failure of the
// scenario (t.Error, t.Fatal, a MustRunUntil that gives up) is recorded as
// the violation of the property "scenario" instead of failing the test,
// so that Explore can go on to other seeds and shrink. It embeds the
// bubble's own *testing.T for what it does not change (Context, TempDir,
// Setenv, ...).
type probe struct {
	testing.TB
	main int      // the goroutine that runs the scenario
	c    *Cluster // nil until the cluster started

	mu        sync.Mutex
	violation *Violation
	cleanups  []func()
	failed    bool
}

// failNow is what FailNow panics with on the scenario's goroutine; run
// recovers it.
type failNow struct{}

// errViolated is what the cluster's steps fail with once a property is
// broken: the bench is over, and what the scenario does next is not
// looked at.
var errViolated = errors.New("clustertest: a property was violated: the cluster stopped serving (see the report)")

// record keeps the first violation.
func (p *probe) record(property string, step uint64, msg string, trace []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = true
	if p.violation != nil {
		return
	}
	p.violation = &Violation{Property: property, Message: msg, Step: step, Trace: trace}
}

func (p *probe) violated() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.violation != nil
}

// fail records a failure of the scenario.
func (p *probe) fail(msg string) {
	var trace []string
	if p.c != nil {
		trace = p.c.Trace()
	}
	p.record("scenario", 0, strings.TrimSuffix(msg, "\n"), trace)
}

func (p *probe) Error(args ...any)                 { p.fail(fmt.Sprintln(args...)) }
func (p *probe) Errorf(format string, args ...any) { p.fail(fmt.Sprintf(format, args...)) }
func (p *probe) Fail()                             { p.fail("the scenario failed (t.Fail)") }
func (p *probe) Fatal(args ...any)                 { p.fail(fmt.Sprintln(args...)); p.FailNow() }
func (p *probe) Fatalf(format string, args ...any) { p.fail(fmt.Sprintf(format, args...)); p.FailNow() }
func (p *probe) Helper()                           {}

// Log and Logf are dropped: a thousand benches would bury the report.
func (p *probe) Log(args ...any)                 {}
func (p *probe) Logf(format string, args ...any) {}

func (p *probe) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// FailNow ends the scenario: on its goroutine by a panic that run
// recovers, on another (which testing does not allow either) by ending
// that goroutine.
func (p *probe) FailNow() {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
	if bubble.Self() == p.main {
		panic(failNow{})
	}
	runtime.Goexit()
}

// Skip ends the scenario without a failure.
func (p *probe) Skip(args ...any)                 { p.SkipNow() }
func (p *probe) Skipf(format string, args ...any) { p.SkipNow() }
func (p *probe) SkipNow() {
	if bubble.Self() == p.main {
		panic(failNow{})
	}
	runtime.Goexit()
}
func (p *probe) Skipped() bool { return false }

// Cleanup runs f when the scenario ends, before the cluster stops.
func (p *probe) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}

func (p *probe) runCleanups() {
	p.mu.Lock()
	fs := slices.Clone(p.cleanups)
	p.cleanups = nil
	p.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		p.run(f)
	}
}

// run calls f on the scenario's goroutine, turning FailNow's panic into
// its end.
func (p *probe) run(f func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(failNow); !ok {
				p.fail(fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			}
		}
	}()
	f()
}
