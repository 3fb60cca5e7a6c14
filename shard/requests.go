package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The requests of a member's session: renewals, fresh reads, writes of
// the assignment, and the leave.

// request bounds one request of the loop: it must not hold the loop past
// a retry period (the fence is decided in the loop).
func (s *session) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.m.cfg.RetryPeriod)
}

// renew renews this member's Lease (creating it first), then reads the
// record afresh.
func (s *session) renew(ctx context.Context, now time.Time) {
	m, core := s.m, s.m.core
	claims := core.Renewing(now)
	rctx, cancel := s.request(ctx)
	defer cancel()
	name := memberLeaseName(m.cfg.Group, m.cfg.Identity)
	want := newMemberLease(m.cfg.Namespace, m.cfg.Group, m.cfg.Identity, m.cfg.Incarnation, claims, m.cfg.LeaseDuration, now)
	var got *coordinationv1.Lease
	var err error
	if s.own == nil {
		got, err = m.cfg.Leases.Create(rctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var old *coordinationv1.Lease
			if old, err = m.cfg.Leases.Get(rctx, name, metav1.GetOptions{}); err == nil {
				s.log.Info("Taking over the Lease of a previous process with this identity", "lease", name, "incarnation", old.Annotations[AnnotationIncarnation])
				want.ResourceVersion = old.ResourceVersion
				got, err = m.cfg.Leases.Update(rctx, want, metav1.UpdateOptions{})
			}
		}
	} else {
		want.ResourceVersion = s.own.ResourceVersion
		want.Spec.AcquireTime = s.own.Spec.AcquireTime
		got, err = m.cfg.Leases.Update(rctx, want, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			var cur *coordinationv1.Lease
			if cur, err = m.cfg.Leases.Get(rctx, name, metav1.GetOptions{}); err == nil {
				if inc := cur.Annotations[AnnotationIncarnation]; inc != m.cfg.Incarnation {
					core.Collision(fmt.Sprintf("the Lease %s/%s was renewed by incarnation %q, this process is %q", m.cfg.Namespace, name, inc, m.cfg.Incarnation))
					return
				}
				s.event(EventProblem, -1, fmt.Sprintf("the Lease %s/%s of this member was modified by another writer (by hand?): rewritten", m.cfg.Namespace, name))
				want.ResourceVersion = cur.ResourceVersion
				got, err = m.cfg.Leases.Update(rctx, want, metav1.UpdateOptions{})
			}
		case apierrors.IsNotFound(err):
			s.event(EventProblem, -1, fmt.Sprintf("the Lease %s/%s of this member was deleted (by hand?): created again", m.cfg.Namespace, name))
			want.ResourceVersion = ""
			got, err = m.cfg.Leases.Create(rctx, want, metav1.CreateOptions{})
		}
	}
	if err != nil {
		s.log.Error(err, "Renewing the Lease", "lease", name)
		core.WriteFailed(now) // back off: no renewal at once, over and over
		return
	}
	s.own = got
	core.Renewed(now, claims)
	m.mu.Lock()
	m.deadline = now.Add(m.cfg.RenewDeadline)
	m.mu.Unlock()
	core.Read([]*coordinationv1.Lease{got}, now)
	s.readRecord(rctx, now)
}

// readRecord reads the assignment record afresh.
func (s *session) readRecord(ctx context.Context, now time.Time) {
	m := s.m
	rec, err := m.cfg.Leases.Get(ctx, m.cfg.Group, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		m.core.ObserveRecordAbsent(now)
	case err != nil:
		s.log.Error(err, "Reading the assignment", "lease", m.cfg.Group)
		m.core.WriteFailed(now)
	default:
		m.core.Read([]*coordinationv1.Lease{rec}, now)
	}
}

// verify reads the Leases of members that seem gone.
func (s *session) verify(ctx context.Context, ids []string, now time.Time) {
	m := s.m
	rctx, cancel := s.request(ctx)
	defer cancel()
	for _, id := range ids {
		l, err := m.cfg.Leases.Get(rctx, memberLeaseName(m.cfg.Group, id), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			m.core.Read(nil, now, id)
		case err != nil:
			s.log.Error(err, "Reading the Lease of a member that seems gone", "member", id)
			m.core.WriteFailed(now)
			return
		default:
			m.core.Read([]*coordinationv1.Lease{l}, now)
		}
	}
}

// writeLayout creates the record, or replaces one that cannot be read.
func (s *session) writeLayout(ctx context.Context, reset bool, rv string, now time.Time) {
	m := s.m
	rctx, cancel := s.request(ctx)
	defer cancel()
	var names []string
	if m.cfg.Layout == LayoutNamespaces && m.cfg.Namespaces != nil {
		var err error
		if names, err = m.cfg.Namespaces(rctx); err != nil {
			s.log.Error(err, "Listing the namespaces to lay the ranges out")
			m.core.WriteFailed(now)
			return
		}
	}
	layout, err := m.cfg.Layout.Cut(m.cfg.Ranges, names)
	if err != nil {
		s.log.Error(err, "Laying the ranges out")
		m.core.WriteFailed(now)
		return
	}
	rec := newRecord(m.cfg.Namespace, m.cfg.Group, fmt.Sprintf("%s/%d", m.cfg.Incarnation, now.UnixNano()), layout)
	var got *coordinationv1.Lease
	if reset {
		rec.ResourceVersion = rv // replaces the record that could not be read, nothing newer
		if got, err = m.cfg.Leases.Update(rctx, rec, metav1.UpdateOptions{}); err != nil {
			s.afterWriteError(rctx, err, now)
			return
		}
		s.event(EventProblem, -1, "the assignment record was reset: every range is free")
	} else if got, err = m.cfg.Leases.Create(rctx, rec, metav1.CreateOptions{}); err != nil {
		s.afterWriteError(rctx, err, now)
		return
	} else {
		s.log.Info("Created the assignment record", "ranges", m.cfg.Ranges, "layout", m.cfg.Layout, "namespaces", len(names))
	}
	m.core.Wrote(got, now)
}

// write writes the assignment a over the record at version rv.
func (s *session) write(ctx context.Context, a Assignment, rv string, now time.Time) {
	m := s.m
	rctx, cancel := s.request(ctx)
	defer cancel()
	cur, err := m.cfg.Leases.Get(rctx, m.cfg.Group, metav1.GetOptions{})
	if err == nil && cur.ResourceVersion != rv {
		m.core.Read([]*coordinationv1.Lease{cur}, now) // decide again on the fresh record
		return
	}
	if err == nil {
		var got *coordinationv1.Lease
		if got, err = m.cfg.Leases.Update(rctx, a.encode(cur), metav1.UpdateOptions{}); err == nil {
			if before, derr := decodeAssignment(cur); derr == nil {
				for i, o := range before.Owners {
					if o.Member == m.cfg.Identity && a.Owners[i].Member == "" {
						s.event(EventReleased, i, "released in the record")
					}
				}
			}
			m.core.Wrote(got, now)
			return
		}
	}
	s.afterWriteError(rctx, err, now)
}

// afterWriteError reads the record afresh after a conflict (or an
// AlreadyExists), and backs off after another error.
func (s *session) afterWriteError(ctx context.Context, err error, now time.Time) {
	m := s.m
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		cur, gerr := m.cfg.Leases.Get(ctx, m.cfg.Group, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			m.core.ObserveRecordAbsent(now)
			return
		case gerr == nil:
			m.core.Read([]*coordinationv1.Lease{cur}, now)
			return
		}
		err = gerr
	}
	s.log.Error(err, "Writing the assignment", "lease", m.cfg.Group)
	m.core.WriteFailed(now)
}

// leave releases this member's entries in the record and deletes its
// Lease, so that the others need not wait for it to expire. Its ranges
// have stopped.
func (s *session) leave(ctx context.Context) {
	m := s.m
	ctx, cancel := context.WithTimeout(ctx, m.cfg.LeaseDuration)
	defer cancel()
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := m.cfg.Leases.Get(ctx, m.cfg.Group, metav1.GetOptions{})
		if err != nil {
			break
		}
		a, err := decodeAssignment(cur)
		if err != nil {
			break
		}
		changed := false
		for i, o := range a.Owners {
			if o.Member == m.cfg.Identity {
				a.Owners[i], changed = Owner{Epoch: o.Epoch, Released: m.cfg.Identity}, true
			}
		}
		if !changed {
			break
		}
		a.Generation++
		if _, err = m.cfg.Leases.Update(ctx, a.encode(cur), metav1.UpdateOptions{}); err == nil {
			s.event(EventReleased, -1, "left the group")
			break
		} else if !apierrors.IsConflict(err) {
			s.log.Error(err, "Releasing the ranges on leaving")
			break
		}
	}
	if s.own != nil {
		rv := s.own.ResourceVersion
		if err := m.cfg.Leases.Delete(ctx, s.own.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil && !apierrors.IsNotFound(err) {
			s.log.Error(err, "Deleting this member's Lease on leaving")
		}
	}
}
