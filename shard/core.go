package shard

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Config configures one member of a group.
type Config struct {
	// Group names the group: its assignment Lease is called so, its
	// members' Leases "<Group>-<Identity>", and all carry the label
	// ctrlkit.io/shard-group=<Group>. A DNS label.
	Group string
	// Identity names this member; unique in the group (the Lease name
	// "<Group>-<Identity>" must be a DNS subdomain).
	Identity string
	// Ranges is the number of ranges the hash space is cut into: the
	// units that move between members. Every member of a group must have
	// the same. At least 1; with N members each owns about Ranges/N.
	Ranges int
	// LeaseDuration is how long the others wait, after they last saw a
	// member's Lease change, before they take its ranges (client-go's
	// leader election and kube-controller-manager: 15 s).
	LeaseDuration time.Duration
	// RenewDeadline is how long a member goes on running its ranges
	// without renewing its Lease: past it, it stops them at once (10 s).
	// Below LeaseDuration: the difference is what the writes in flight
	// when it stops have to finish.
	RenewDeadline time.Duration
	// RetryPeriod is how often a member renews its Lease (and re-reads
	// the assignment) (2 s).
	RetryPeriod time.Duration
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	if err := validateNames(c.Group, c.Identity); err != nil {
		return err
	}
	switch {
	case c.Ranges < 1:
		return fmt.Errorf("shard: %d ranges; want at least 1", c.Ranges)
	case c.Ranges > 4096:
		return fmt.Errorf("shard: %d ranges; want at most 4096", c.Ranges)
	case c.RetryPeriod <= 0:
		return fmt.Errorf("shard: retry period %v; want it positive", c.RetryPeriod)
	case c.RenewDeadline <= c.RetryPeriod:
		return fmt.Errorf("shard: renew deadline %v; want it longer than the retry period %v", c.RenewDeadline, c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("shard: lease duration %v; want it longer than the renew deadline %v", c.LeaseDuration, c.RenewDeadline)
	}
	return nil
}

// ErrFatal classes the errors after which a member must stop: another
// process renews its Lease (two members with one identity), or the group
// is cut into another number of ranges.
var ErrFatal = errors.New("shard: fatal")

// observed is what a member knows of another member's Lease.
type observed struct {
	rv       string    // resourceVersion; "" while the Lease is absent
	holder   string    // spec.holderIdentity
	since    time.Time // when rv (or the absence) was first seen
	duration time.Duration
	verified time.Time // when a fresh read last found rv unchanged
	// claims are the ranges the member runs or is about to start, as its
	// Lease says (AnnotationRunning); unknown when the Lease has no
	// readable annotation (it may run anything).
	claims  []int
	unknown bool
}

// mayRun reports whether the member may run a range that pick picks.
func (o *observed) mayRun(pick func(int) bool) bool {
	return o.unknown || slices.ContainsFunc(o.claims, pick)
}

// expiry is when the member's Lease expires, as this member sees it.
func (o *observed) expiry() time.Time { return o.since.Add(o.duration) }

// entrySeen is an entry of the record and when it was first read.
type entrySeen struct {
	owner Owner
	at    time.Time
}

// running is a range this member runs.
type running struct {
	epoch    int64
	stopping bool // asked to stop; Stopped tells when it has
	release  bool // and to release it in the record once stopped
}

// Core is the pure core of a member: what it knows (the Leases it
// observed, the assignment, its own ranges and renewals) and what to do
// next ([Core.Decide]). It does no I/O and reads no clock: every method
// takes the time. [Member] is its shell. The zero Core is not usable:
// build it with [NewCore].
type Core struct {
	cfg    Config
	leases map[string]*observed // the group's members by identity (this member's own included)

	rec   Assignment
	recRV string
	// cachedRecRV is the record's resourceVersion in the cache, readFor
	// what it was at the last fresh read of the record: when they differ
	// the record changed since, and is read again.
	cachedRecRV, readFor string
	recLive              bool  // the record exists (as last read)
	recBad               error // the record cannot be read: since recBadAt
	recBadAt             time.Time
	// recGoneAt is when the record was last found absent.
	recGoneAt time.Time
	layout    []Range // of rec

	run   map[int]*running
	mine  map[int]int64     // the epoch of each entry this member wrote that names it
	alien map[int]time.Time // entries naming this member that it did not write: since
	// seenAt is, for each entry of the record, when this member first
	// read it as it is (a takeover needs evidence newer than the entry).
	seenAt []entrySeen
	// suspect holds the entries that look edited by hand (freed without
	// a release, or named with a release): since when.
	suspect map[int]time.Time
	// confirmedEpoch is, for each range this member's last write gave it
	// and that it has not started since, the epoch written.
	confirmedEpoch map[int]int64

	// published are the ranges this member's Lease claimed at its last
	// successful renewal: a range starts only once it is among them.
	published []int
	lastRenew time.Time // start of the last successful renewal
	renewedAt time.Time // start of the last renewal attempt
	wroteAt   time.Time // last failed write or verification, for the backoff
	fatal     error
	problems  []string
}

// NewCore returns the core of member cfg.Identity, with no range.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Core{cfg: cfg, leases: map[string]*observed{}, run: map[int]*running{},
		mine: map[int]int64{}, alien: map[int]time.Time{}, suspect: map[int]time.Time{}, confirmedEpoch: map[int]int64{}}, nil
}

// Observe takes the Leases of the group's namespace as an informer's
// cache (or a list) holds them at now: its members' (by label) and its
// assignment. A member's Lease that is missing is taken as absent.
func (c *Core) Observe(leases []*coordinationv1.Lease, now time.Time) {
	seen := c.observe(leases, now, false)
	for id := range c.leases {
		if !seen[id] {
			c.observeMember(id, nil, now, false)
		}
	}
}

// Read takes fresh reads (a Get, never a cache) at now: the Leases
// found, and the members whose Lease was not found (absent).
func (c *Core) Read(leases []*coordinationv1.Lease, now time.Time, absent ...string) {
	c.observe(leases, now, true)
	for _, id := range absent {
		c.observeMember(id, nil, now, true)
	}
}

func (c *Core) observe(leases []*coordinationv1.Lease, now time.Time, fresh bool) map[string]bool {
	seen, recSeen := map[string]bool{}, false
	defer func() {
		if !fresh && !recSeen {
			c.cachedRecRV = ""
		}
	}()
	for _, l := range leases {
		if l.Labels[LabelGroup] != c.cfg.Group {
			continue
		}
		if l.Name == c.cfg.Group {
			if fresh {
				c.observeRecord(l, now)
			} else {
				c.cachedRecRV = l.ResourceVersion
				recSeen = true
			}
			continue
		}
		id, ok := strings.CutPrefix(l.Name, c.cfg.Group+"-")
		if !ok {
			c.problem(fmt.Sprintf("Lease %s/%s has the label %s=%s but is not named %s-<identity>: ignored", l.Namespace, l.Name, LabelGroup, c.cfg.Group, c.cfg.Group))
			continue
		}
		seen[id] = true
		c.observeMember(id, l, now, fresh)
	}
	return seen
}

// ObserveRecordAbsent takes a fresh read at now that found no assignment
// Lease.
func (c *Core) ObserveRecordAbsent(now time.Time) {
	// Evidence that no member runs a range must be newer than this read:
	// a record may have come and gone since the last one.
	c.recGoneAt = now
	c.recLive, c.recRV, c.readFor, c.recBad = false, "", c.cachedRecRV, nil
	c.forgetEntries()
}

// forgetEntries forgets what this member knew of the record's entries:
// the record is gone or cannot be read.
func (c *Core) forgetEntries() {
	clear(c.mine)
	clear(c.confirmedEpoch)
	clear(c.alien)
	clear(c.suspect)
	c.seenAt = nil
}

// observeMember takes member id's Lease l (nil: absent) at now; fresh
// says whether it comes from a fresh read.
func (c *Core) observeMember(id string, l *coordinationv1.Lease, now time.Time, fresh bool) {
	o := c.leases[id]
	if o == nil {
		o = &observed{since: now, duration: c.cfg.LeaseDuration}
		c.leases[id] = o
	}
	rv, holder, d := "", "", c.cfg.LeaseDuration
	if l != nil {
		rv = l.ResourceVersion
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if s := l.Spec.LeaseDurationSeconds; s != nil && time.Duration(*s)*time.Second > d {
			d = time.Duration(*s) * time.Second // the longer wait is the safe one
		}
		if holder != "" && holder != id {
			c.problem(fmt.Sprintf("Lease %s/%s is held by %q, not by the member it is named after (%s): edited by hand? Taken as that member's", l.Namespace, l.Name, holder, id))
		}
	}
	if rv == o.rv && o.holder == holder {
		if fresh {
			o.verified = now
		}
		return
	}
	if !fresh && rv != "" && o.rv != "" {
		if cmp, err := resourceversion.CompareResourceVersion(rv, o.rv); err == nil && cmp < 0 {
			return // the cache lags behind a fresh read
		}
	}
	// A change, or a first sighting: the member is alive as of now (an
	// absence counts from when it was noticed).
	o.rv, o.holder, o.since, o.duration = rv, holder, now, d
	o.claims, o.unknown = nil, l == nil // a member without a Lease may run anything until it expires
	if l != nil {
		var err error
		if o.claims, err = parseClaims(l.Annotations[AnnotationRunning], c.cfg.Ranges); err != nil {
			o.unknown = true
			c.problem(fmt.Sprintf("Lease %s/%s: annotation %s: %v (edited by hand?): the member is taken to run any range until it renews", l.Namespace, l.Name, AnnotationRunning, err))
		}
	}
	if fresh {
		o.verified = now
	}
}

// observeRecord takes a fresh read of the record (the cache's copy only
// tells when to read it: fresh reads are in order, a cache may lag).
func (c *Core) observeRecord(l *coordinationv1.Lease, now time.Time) {
	c.readFor = c.cachedRecRV
	a, err := decodeAssignment(l)
	if err != nil {
		if c.recBad == nil || c.recRV != l.ResourceVersion {
			c.problem(err.Error() + ": edited by hand? Every member stops its ranges; the record is reset once the lease duration has passed")
		}
		if c.recBad == nil || c.recRV != l.ResourceVersion {
			c.recBadAt = now // another bad record: a good one may have come and gone
		}
		c.forgetEntries()
		c.recBad, c.recRV, c.recLive = err, l.ResourceVersion, true
		return
	}
	if a.Ranges != c.cfg.Ranges {
		c.fatal = fmt.Errorf("%w: the group %s is cut into %d ranges (Lease %s/%s) and this member into %d: every member needs the same number", ErrFatal, c.cfg.Group, a.Ranges, l.Namespace, l.Name, c.cfg.Ranges)
		return
	}
	layout, _ := a.layout() // checked by decodeAssignment
	if a.Incarnation != c.rec.Incarnation {
		c.forgetEntries() // another record: its entries are new
	}
	if len(c.seenAt) != len(a.Owners) {
		c.seenAt = make([]entrySeen, len(a.Owners))
	}
	for i, o := range a.Owners {
		if c.seenAt[i].at.IsZero() || c.seenAt[i].owner != o {
			c.seenAt[i] = entrySeen{owner: o, at: now}
		}
	}
	c.rec, c.recRV, c.recLive, c.recBad, c.layout = a, l.ResourceVersion, true, nil, layout
	c.recGoneAt = time.Time{}
}

// Wrote takes the assignment Lease as this member's update (or create)
// returned it.
func (c *Core) Wrote(l *coordinationv1.Lease, now time.Time) {
	c.observeRecord(l, now)
	for i, o := range c.rec.Owners {
		if o.Member == c.cfg.Identity {
			c.mine[i], c.confirmedEpoch[i] = o.Epoch, o.Epoch
			delete(c.alien, i)
		} else {
			delete(c.mine, i)
			delete(c.confirmedEpoch, i)
		}
	}
}

// WriteFailed takes a failed write, renewal or verification (other than a
// conflict, which a fresh read answers): the next is not before a retry
// period.
func (c *Core) WriteFailed(now time.Time) { c.wroteAt = now }

// Renewing takes the start of an attempt to renew this member's Lease
// and returns the ranges the renewal must claim (AnnotationRunning): those
// it runs or stops, and those it has taken and will start.
func (c *Core) Renewing(now time.Time) []int {
	c.renewedAt = now
	set := map[int]bool{}
	for i := range c.run {
		set[i] = true
	}
	for i := range c.confirmedEpoch {
		set[i] = true
	}
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// Renewed takes the success of the renewal that started at start and
// claimed claims.
func (c *Core) Renewed(start time.Time, claims []int) {
	if !start.Before(c.lastRenew) {
		c.lastRenew, c.published = start, slices.Clone(claims)
	}
}

// Collision takes the sign that another process renews this member's
// Lease: fatal.
func (c *Core) Collision(detail string) {
	c.fatal = fmt.Errorf("%w: %s: two processes renew the Lease of member %s (its identity must be unique in the group)", ErrFatal, detail, c.cfg.Identity)
}

// Stopped takes the end of range i, whose stop a plan asked for: nothing
// of it runs any more.
func (c *Core) Stopped(i int) {
	r := c.run[i]
	if r == nil {
		return
	}
	delete(c.run, i)
	if !r.release {
		return // fenced: the entry stays this member's, to take again
	}
	c.mine[i] = r.epoch // the release is written by the next plan
}

// Running returns the ranges this member runs (being stopped included),
// in order.
func (c *Core) Running() []int {
	out := make([]int, 0, len(c.run))
	for i := range c.run {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// Layout returns the ranges of the assignment (nil before it is read).
func (c *Core) Layout() []Range { return slices.Clone(c.layout) }

func (c *Core) problem(p string) { c.problems = append(c.problems, p) }

// parseClaims reads AnnotationRunning: range indexes joined by commas.
func parseClaims(s string, ranges int) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= ranges {
			return nil, fmt.Errorf("%q is not a range index below %d", f, ranges)
		}
		out = append(out, i)
	}
	return out, nil
}

// formatClaims writes AnnotationRunning.
func formatClaims(claims []int) string {
	parts := make([]string, len(claims))
	for i, c := range claims {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}
