package envtest

import (
	"errors"
	"time"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// Latency is how long the bench takes to answer a request, by kind of
// request. The bench answers in microseconds where kube-apiserver and etcd
// take a millisecond or more; an envtest suite whose test goroutine does
// by hand what a controller of the same process reacts to (set a status
// right after an update, check a deletion right after the delete that
// causes it) is calibrated, without knowing it, to kube-apiserver's pace,
// and on a bench ten times quicker its test wins races its controller won
// on envtest. A Latency gives the controller kube-apiserver's head start.
type Latency struct {
	// Read delays each get and list.
	Read time.Duration
	// Write delays each create, update, patch and delete, status writes
	// included.
	Write time.Duration
}

// The default Latency is a local kube-apiserver's and etcd's, at the low
// end: measured on envtest (kube-apiserver v1.37.1 and etcd 3.7 on
// loopback, a loaded 2-core machine), a get took 2 ms (median) and a
// write 4 to 9 ms.
const (
	defaultRead  = time.Millisecond
	defaultWrite = 2 * time.Millisecond
)

// rules are the fault rules that make l's delays.
func (l Latency) rules() ([]memcluster.FaultRule, error) {
	if l.Read < 0 || l.Write < 0 {
		return nil, errors.New("envtest: a negative Latency")
	}
	var rules []memcluster.FaultRule
	add := func(d time.Duration, verbs ...string) {
		if d == 0 {
			return
		}
		for _, v := range verbs {
			rules = append(rules, memcluster.FaultRule{Verb: v, Latency: d})
		}
	}
	add(l.Read, "get", "list")
	add(l.Write, "create", "update", "update/status", "patch", "delete")
	return rules, nil
}

// withLatency returns f with the delays of e's Latency first.
func (e *Environment) withLatency(f memcluster.Faults) (memcluster.Faults, error) {
	l := Latency{Read: defaultRead, Write: defaultWrite}
	if e.Latency != nil {
		l = *e.Latency
	}
	rules, err := l.rules()
	if err != nil {
		return memcluster.Faults{}, err
	}
	f.Rules = append(rules, f.Rules...)
	return f, nil
}
