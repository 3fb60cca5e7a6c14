package shard

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels and annotations of a group's Leases.
const (
	// LabelGroup is on every Lease of a group (its members' and its
	// assignment): its value is the group's name.
	LabelGroup = "ctrlkit.io/shard-group"
	// AnnotationAssignment holds the assignment of the ranges, on the
	// Lease named after the group (see [Assignment]).
	AnnotationAssignment = "ctrlkit.io/shard-assignment"
	// AnnotationIncarnation is on a member's Lease: a token of the process
	// that renews it, by which a member tells that another process renews
	// its Lease too (two members with one identity).
	AnnotationIncarnation = "ctrlkit.io/shard-incarnation"
	// AnnotationRunning is on a member's Lease: the ranges it runs (or
	// still stops, or is about to start), by index, joined by commas. A
	// member writes a range there before it starts it.
	AnnotationRunning = "ctrlkit.io/shard-running"
)

// Assignment is what the group's assignment Lease records: the number of
// ranges the hash space is cut into and, for each, the member that may
// run it. It is the only source of truth about who owns a range: a
// member runs a range only after its own compare-and-swap update of this
// record named it (see the package documentation).
type Assignment struct {
	// Ranges is the number of ranges; every member of the group must be
	// configured with the same number.
	Ranges int `json:"ranges"`
	// Starts are the first hashes of the ranges, in order, written as
	// shard selectors write bounds (0x and 16 hex digits): range i is
	// Starts[i] to Starts[i+1]-1, the last one to the end of the space.
	// The member that creates the record chooses them (see [Layout]) and
	// they never change while the record exists.
	Starts []string `json:"starts"`
	// Generation counts the updates of the record.
	Generation int64 `json:"generation"`
	// Incarnation tells records apart: set when the record is created
	// (or reset), never changed. Epochs count within one incarnation.
	Incarnation string `json:"incarnation"`
	// Owners has one entry per range.
	Owners []Owner `json:"owners"`
}

// Owner is the owner of one range in an [Assignment].
type Owner struct {
	// Member is the identity of the member that may run the range; ""
	// means nobody (released, or never taken).
	Member string `json:"member,omitempty"`
	// Epoch counts the range's acquisitions: a member that takes the
	// range writes the previous epoch plus one, and so knows an entry it
	// wrote from one written by hand.
	Epoch int64 `json:"epoch,omitempty"`
	// Released names the member that released the range (Member is then
	// ""): a range freed otherwise (by hand) is taken only after a lease
	// duration, when whoever ran it has seen the change and stopped.
	Released string `json:"released,omitempty"`
}

// clone returns a deep copy of a.
func (a Assignment) clone() Assignment {
	a.Owners = append([]Owner(nil), a.Owners...)
	a.Starts = append([]string(nil), a.Starts...)
	return a
}

// decodeAssignment reads the assignment of a record Lease.
func decodeAssignment(l *coordinationv1.Lease) (Assignment, error) {
	raw, ok := l.Annotations[AnnotationAssignment]
	if !ok {
		return Assignment{}, fmt.Errorf("shard: Lease %s/%s has no annotation %s", l.Namespace, l.Name, AnnotationAssignment)
	}
	var a Assignment
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Assignment{}, fmt.Errorf("shard: Lease %s/%s: annotation %s: %v", l.Namespace, l.Name, AnnotationAssignment, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shard: Lease %s/%s: annotation %s: %s", l.Namespace, l.Name, AnnotationAssignment, fmt.Sprintf(format, args...))
	}
	if a.Ranges < 1 || len(a.Owners) != a.Ranges || len(a.Starts) != a.Ranges {
		return Assignment{}, bad("%d ranges with %d starts and %d owners", a.Ranges, len(a.Starts), len(a.Owners))
	}
	if _, err := a.layout(); err != nil {
		return Assignment{}, bad("%v", err)
	}
	for i, o := range a.Owners {
		if o.Epoch < 0 {
			return Assignment{}, bad("range %d has a negative epoch", i)
		}
	}
	return a, nil
}

// layout returns the ranges a's starts define.
func (a Assignment) layout() ([]Range, error) {
	out := make([]Range, len(a.Starts))
	for i, s := range a.Starts {
		hex, ok := strings.CutPrefix(s, "0x")
		v, err := strconv.ParseUint(hex, 16, 64)
		if !ok || len(hex) != 16 || err != nil {
			return nil, fmt.Errorf("range %d starts at %q; want 0x and 16 hex digits", i, s)
		}
		if i == 0 && v != 0 {
			return nil, fmt.Errorf("the first range starts at %s; want 0x0000000000000000", s)
		}
		if i > 0 && v <= out[i-1].First {
			return nil, fmt.Errorf("range %d starts at %s, not after range %d (%s)", i, s, i-1, a.Starts[i-1])
		}
		out[i].First = v
		if i > 0 {
			out[i-1].Last = v - 1
		}
	}
	out[len(out)-1].Last = math.MaxUint64
	return out, nil
}

// encode writes a into the record Lease l (a copy of it).
func (a Assignment) encode(l *coordinationv1.Lease) *coordinationv1.Lease {
	out := l.DeepCopy()
	b, err := json.Marshal(a)
	if err != nil { // plain strings and integers
		panic(fmt.Sprintf("shard: encoding an assignment: %v", err))
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationAssignment] = string(b)
	return out
}

// memberLeaseName is the name of the Lease of member id of group.
func memberLeaseName(group, id string) string { return group + "-" + id }

// validateNames checks that group and identity make valid Lease names and
// a valid label value.
func validateNames(group, id string) error {
	if errs := validation.IsDNS1123Label(group); len(errs) > 0 {
		return fmt.Errorf("shard: group name %q: %s", group, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(group); len(errs) > 0 {
		return fmt.Errorf("shard: group name %q: %s", group, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(memberLeaseName(group, id)); len(errs) > 0 || id == "" {
		return fmt.Errorf("shard: identity %q: the Lease name %q is not a DNS subdomain: %s", id, memberLeaseName(group, id), strings.Join(errs, "; "))
	}
	return nil
}

// newMemberLease is the Lease of member id, renewed at now.
func newMemberLease(ns, group, id, incarnation string, claims []int, d time.Duration, now time.Time) *coordinationv1.Lease {
	secs := int32((d + time.Second - 1) / time.Second)
	t := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: memberLeaseName(group, id),
			Labels:      map[string]string{LabelGroup: group},
			Annotations: map[string]string{AnnotationIncarnation: incarnation, AnnotationRunning: formatClaims(claims)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &t, RenewTime: &t},
	}
}

// newRecord is a group's assignment Lease with every range free, of
// incarnation inc.
func newRecord(ns, group, inc string, layout []Range) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group, Labels: map[string]string{LabelGroup: group}}}
	a := Assignment{Ranges: len(layout), Owners: make([]Owner, len(layout)), Incarnation: inc}
	for _, r := range layout {
		a.Starts = append(a.Starts, r.Start())
	}
	return a.encode(l)
}
