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
	// ListCatchUp is how long after a write the watch cache of another
	// kind catches up with it: a list with no resourceVersion (a
	// client.List of a Manager's uncached client, or of a client made
	// with client.New) whose kind was not the latest written is served
	// no earlier than ListCatchUp after that write, as kube-apiserver
	// v1.37 serves it from its watch cache once etcd's next progress
	// notification arrives (memcluster.Faults.ListCatchUp). A list of the
	// kind just written, or from an informer's cache, does not wait.
	ListCatchUp time.Duration
}

// The default Latency is a local kube-apiserver's and etcd's, at the low
// end: measured on envtest (kube-apiserver v1.37.1 and etcd 3.7 on
// loopback, a loaded 2-core machine), a get took 2 ms (median) and a
// write 4 to 9 ms. A list 0, 10, 30 and 60 ms after a write of another
// kind took 97, 86, 67 and 37 ms (its kind's watch cache caught up about
// 95 ms after the write), one after a write of its own kind 1.5 ms.
const (
	defaultRead        = time.Millisecond
	defaultWrite       = 2 * time.Millisecond
	defaultListCatchUp = 95 * time.Millisecond
)

// rules are the fault rules that make l's delays.
func (l Latency) rules() ([]memcluster.FaultRule, error) {
	if l.Read < 0 || l.Write < 0 || l.ListCatchUp < 0 {
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
	l := Latency{Read: defaultRead, Write: defaultWrite, ListCatchUp: defaultListCatchUp}
	if e.Latency != nil {
		l = *e.Latency
	}
	rules, err := l.rules()
	if err != nil {
		return memcluster.Faults{}, err
	}
	f.Rules = append(rules, f.Rules...)
	if f.ListCatchUp == 0 {
		f.ListCatchUp = l.ListCatchUp
	}
	return f, nil
}
