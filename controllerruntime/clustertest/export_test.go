package clustertest

import (
	"net/http"
	"testing"
)

// SetRequestFilter makes f see every REST request of c once the bench
// has read it, before the API server serves it: a test's way to break the
// API model on purpose.
func SetRequestFilter(c *Cluster, f func(*http.Request)) { c.filter.Store(&f) }

// Shrink shrinks found, a schedule of seed that breaks a property of
// opts with scenario, as Explore shrinks what it finds; nil if found
// breaks none.
func Shrink(t *testing.T, opts ExploreOptions, scenario Scenario, seed uint64, found Schedule) *Violation {
	opts.Options.shared = newShared()
	out := runBench(t, opts, scenario, seed, found, nil, true)
	if out.violation == nil {
		return nil
	}
	v := &Violation{Property: out.violation.Property, Seed: seed, Found: found}
	return shrink(t, opts, scenario, v)
}
