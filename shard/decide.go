package shard

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Plan is what a member does next, in this order: stop ranges, renew its
// Lease, read what ReadRecord and Verify ask for, create or write the
// record, start ranges, delete Leases; then call [Core.Decide] again by
// Wake at the latest (or as soon as something is observed, or a request
// was made).
type Plan struct {
	// Stop lists the ranges to stop at once: no write of theirs may start
	// from now on. Tell the core when each has stopped ([Core.Stopped]).
	Stop []Stop
	// Renew asks for a renewal of this member's Lease ([Core.Renewing],
	// then [Core.Renewed]).
	Renew bool
	// ReadRecord asks for the assignment Lease to be read afresh (a Get):
	// the cache says it changed. Give it to [Core.Read].
	ReadRecord bool
	// Verify names members whose Lease must be read afresh (a Get, not a
	// cache) before this member acts: one that seems gone before its
	// ranges are taken, every other one before a range that may still run
	// somewhere is taken. Give the answers to [Core.Read].
	Verify []string
	// CreateRecord asks for the group's assignment Lease to be created:
	// it does not exist. ResetRecord asks for it to be replaced, with
	// every range free, if it is still at WriteVersion: it cannot be read.
	// Both need the layout of the ranges ([Layout.Cut]).
	CreateRecord, ResetRecord bool
	// Write is the assignment to write over the record, an update
	// conditional on its resourceVersion WriteVersion; nil for none. Give
	// the result to [Core.Wrote], or on a conflict the record read afresh
	// to [Core.Read].
	Write        *Assignment
	WriteVersion string
	// Start lists the ranges to start.
	Start []Start
	// Delete names the Leases of members gone for long and owning
	// nothing, to delete (conditional on their resourceVersion).
	Delete []Delete
	// Wake is when to decide again at the latest.
	Wake time.Time
	// Problems are what the member noticed and should say (Leases edited
	// by hand, a range taken from it).
	Problems []string
	// Fatal is set when the member must stop: every range is in Stop.
	Fatal error
}

// Stop is one range to stop.
type Stop struct {
	Index int
	// Release asks, once the range has stopped, for it to be released in
	// the record (the core writes it). Without, the range was fenced: its
	// entry stays this member's until it takes the range again.
	Release bool
	Reason  string
}

// Start is one range to start: range Index of the layout.
type Start struct {
	Index int
	Range Range
}

// Delete is a Lease to delete if it still has ResourceVersion.
type Delete struct {
	Name, ResourceVersion string
}

// decision is one call of Decide.
type decision struct {
	c       *Core
	now     time.Time
	p       Plan
	backoff bool
}

func (d *decision) wake(t time.Time) {
	if t.After(d.now) && (d.p.Wake.IsZero() || t.Before(d.p.Wake)) {
		d.p.Wake = t
	}
}

func (d *decision) stop(i int, release bool, reason string) {
	r := d.c.run[i]
	if r == nil || r.stopping {
		return
	}
	r.stopping, r.release = true, release
	d.p.Stop = append(d.p.Stop, Stop{Index: i, Release: release, Reason: reason})
}

func (d *decision) stopAll(reason string) {
	for _, i := range d.c.Running() {
		d.stop(i, false, reason)
	}
}

// othersIdle reports whether no other member may run a range pick picks,
// by fresh reads made at or after after; the members it needs read afresh
// first go to the plan's Verify.
func (d *decision) othersIdle(pick func(int) bool, after time.Time) bool {
	idle := true
	for _, id := range sortedKeys(d.c.leases) {
		o := d.c.leases[id]
		switch {
		case id == d.c.cfg.Identity:
		case !d.now.Before(o.expiry()) && !o.verified.Before(o.expiry()):
			// gone: it has stopped (past its renew deadline)
		case o.verified.Before(after) || !d.now.Before(o.expiry()):
			// Read afresh once the situation is known: whatever it claims
			// later can only come from a write to the record, which this
			// member's conditional write would then lose to.
			idle = false
			if !d.backoff && !slices.Contains(d.p.Verify, id) {
				d.p.Verify = append(d.p.Verify, id)
			}
		case o.mayRun(pick):
			idle = false
			d.wake(d.now.Add(d.c.cfg.RetryPeriod)) // it renews by then
		}
	}
	return idle
}

// Decide returns what to do at now. It updates what the core expects:
// ranges it asks to start run and ranges it asks to stop are stopping,
// from its return on.
func (c *Core) Decide(now time.Time) Plan {
	d := &decision{c: c, now: now}
	d.p.Problems, c.problems = c.problems, nil
	if c.fatal != nil {
		d.p.Fatal = c.fatal
		d.stopAll(c.fatal.Error())
		return d.p
	}
	if c.renewedAt.IsZero() || !now.Before(c.renewedAt.Add(c.cfg.RetryPeriod)) {
		d.p.Renew = true
	}
	d.wake(c.renewedAt.Add(c.cfg.RetryPeriod))
	if c.lastRenew.IsZero() || !now.Before(c.lastRenew.Add(c.cfg.RenewDeadline)) {
		if len(c.run) > 0 {
			d.stopAll(fmt.Sprintf("this member's Lease was last renewed %v ago, past the renew deadline %v", now.Sub(c.lastRenew), c.cfg.RenewDeadline))
		}
		return d.p
	}
	d.wake(c.lastRenew.Add(c.cfg.RenewDeadline))
	d.backoff = !c.wroteAt.IsZero() && now.Before(c.wroteAt.Add(c.cfg.RetryPeriod))
	d.wake(c.wroteAt.Add(c.cfg.RetryPeriod))
	if c.cachedRecRV != c.readFor && c.cachedRecRV != c.recRV && !d.backoff {
		d.p.ReadRecord = true
		return d.p
	}
	any := func(int) bool { return true }
	switch {
	case !c.recLive:
		// Deleted (by hand), or never created. It is created once no
		// member may run a range: they stop theirs when they notice.
		d.stopAll("the assignment record is gone")
		if len(c.run) == 0 && d.othersIdle(any, c.recGoneAt) && len(d.p.Verify) == 0 {
			d.p.CreateRecord = !d.backoff
		}
		return d.p
	case c.recBad != nil:
		d.stopAll("the assignment record cannot be read: " + c.recBad.Error())
		if len(c.run) == 0 && d.othersIdle(any, c.recBadAt) && len(d.p.Verify) == 0 && !d.backoff {
			d.p.ResetRecord, d.p.WriteVersion = true, c.recRV
		}
		return d.p
	}
	d.assign()
	return d.p
}

// assign follows the record: it stops, releases, takes and starts ranges.
func (d *decision) assign() {
	c, now, self := d.c, d.now, d.c.cfg.Identity
	// The members alive as this member sees them; itself first.
	live := []string{self}
	for id, o := range c.leases {
		if id != self && o.rv != "" && o.holder != "" && now.Before(o.expiry()) {
			live = append(live, id)
		}
		d.wake(o.expiry())
	}
	target := Assign(live, c.cfg.Ranges)
	next, changed := c.rec.clone(), false
	take := func(i int, own Owner) {
		next.Owners[i], changed = Owner{Member: self, Epoch: own.Epoch + 1}, true
	}
	for i, own := range c.rec.Owners {
		r := c.run[i]
		only := func(j int) bool { return j == i }
		// An entry freed without a release, or given with one, was
		// written by hand: whoever ran the range may still run it.
		if (own.Member == "" && own.Epoch > 0 && own.Released == "") || (own.Member != "" && own.Released != "") {
			since, seen := c.suspect[i]
			if !seen {
				since, c.suspect[i] = now, now
				d.p.Problems = append(d.p.Problems, fmt.Sprintf("range %d is %s in the record, but not by a member's release: edited by hand? It is taken once no member runs it", i, ownerText(own)))
			}
			if r != nil && own.Member != self {
				d.stop(i, false, "the record was edited by hand")
				delete(c.mine, i)
			}
			if r != nil || !d.othersIdle(only, since) {
				continue
			}
			// Nobody runs it any more: go on as for a released range.
		} else {
			delete(c.suspect, i)
		}
		switch {
		case r != nil && r.stopping:
		case r != nil && (own.Member != self || own.Epoch != r.epoch):
			d.p.Problems = append(d.p.Problems, fmt.Sprintf("range %d, which this member runs, is %s in the record: stopping it (the record was edited by hand, or this member's Lease was taken for expired)", i, ownerText(own)))
			d.stop(i, false, "the record gives it to "+ownerText(own))
			delete(c.mine, i)
		case r != nil && target[i] != self:
			d.stop(i, true, "handed over to "+target[i])
		case r != nil:
		case own.Member == self:
			if epoch, ok := c.mine[i]; !ok || epoch != own.Epoch {
				// Not by this member's write: another may run it.
				since, seen := c.alien[i]
				if !seen {
					since, c.alien[i] = now, now
					d.p.Problems = append(d.p.Problems, fmt.Sprintf("range %d is this member's in the record (epoch %d), but not by its own write: edited by hand? It is taken once no other member runs it", i, own.Epoch))
				}
				if !d.othersIdle(only, since) {
					continue
				}
				delete(c.alien, i)
				c.mine[i] = own.Epoch
				delete(c.confirmedEpoch, i)
			}
			switch {
			case target[i] != self:
				next.Owners[i], changed = Owner{Epoch: own.Epoch, Released: self}, true
			case !c.confirmed(i): // taken again after a fence: confirm with a write
				take(i, own)
			case !slices.Contains(c.published, i):
				// Claim it in this member's Lease before it starts; after a
				// failed renewal, a retry period later.
				if !d.backoff {
					d.p.Renew = true
				}
			default:
				delete(c.confirmedEpoch, i)
				c.run[i] = &running{epoch: own.Epoch}
				d.p.Start = append(d.p.Start, Start{Index: i, Range: c.layout[i]})
			}
		case target[i] != self:
		case own.Member == "":
			take(i, own)
		default: // another member's
			o := c.leases[own.Member]
			if o == nil { // named in the record, never seen: absent from now
				o = &observed{since: now, duration: c.cfg.LeaseDuration}
				c.leases[own.Member] = o
			}
			switch {
			case now.Before(o.expiry()):
				d.wake(o.expiry())
			case o.verified.Before(o.expiry()) || o.verified.Before(c.seenAt[i].at):
				// Not read afresh since it expired, or since it wrote this
				// entry (it may have come back).
				if !d.backoff && !slices.Contains(d.p.Verify, own.Member) {
					d.p.Verify = append(d.p.Verify, own.Member)
				}
			default: // its Lease has not changed for a lease duration, read afresh
				take(i, own)
			}
		}
	}
	if len(d.p.Verify) > 0 || d.backoff {
		return // act on fresh reads
	}
	if changed {
		next.Generation++
		d.p.Write, d.p.WriteVersion = &next, c.recRV
		return
	}
	for _, id := range sortedKeys(c.leases) {
		o := c.leases[id]
		gone := o.expiry().Add(c.cfg.LeaseDuration)
		if id == self || !now.After(gone) || slices.ContainsFunc(c.rec.Owners, func(w Owner) bool { return w.Member == id }) {
			continue
		}
		if o.rv != "" {
			d.p.Delete = append(d.p.Delete, Delete{Name: memberLeaseName(c.cfg.Group, id), ResourceVersion: o.rv})
		}
		delete(c.leases, id)
	}
}

// confirmed reports whether range i is this member's by its own write,
// made since it last ran the range.
func (c *Core) confirmed(i int) bool {
	epoch, ok := c.mine[i]
	confirmed, ok2 := c.confirmedEpoch[i]
	return ok && ok2 && confirmed == epoch
}

func ownerText(o Owner) string {
	if o.Member == "" {
		return fmt.Sprintf("free (epoch %d)", o.Epoch)
	}
	return fmt.Sprintf("%s's (epoch %d)", o.Member, o.Epoch)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
