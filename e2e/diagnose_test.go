package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// diagnose describes what the controllers know of the objects that are
// not converged, for a failure message: the version each informer cache
// holds against the API server's, whether the cache is marked behind a
// controller's own write (the controller then waits for that write's
// event), and the ReplicaSet controller's expectations. A stall with work
// left shows here as a cache that lacks an object, or waits for an event
// that is not coming.
func (w *world) diagnose() string {
	var b strings.Builder
	ctx := context.WithValue(w.ctx, outside{}, true)
	w.c.SetFaults(memcluster.Faults{})
	defer w.c.SetFaults(w.faults)
	ds, _, err := w.c.Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("diagnose: %v\n", err)
	}
	rss, _, err := w.c.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("diagnose: %v\n", err)
	}
	b.WriteString("what the controllers know:\n")
	for _, d := range ds {
		key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
		cached := "not cached"
		if c, err := w.dInf.Cache().Get(key); err == nil {
			cached = "cached at " + c.ResourceVersion
		}
		fmt.Fprintf(&b, "  deployment %s at %s: %s, behind its own write: %v\n", d.Name, d.ResourceVersion, cached, w.dInf.Cache().Behind(key))
	}
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int { return strings.Compare(a.Name, b.Name) })
	for _, rs := range rss {
		key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
		cached := "not cached"
		if c, err := w.rsInf.Cache().Get(key); err == nil {
			cached = fmt.Sprintf("cached at %s (uid %s)", c.ResourceVersion, c.UID)
		}
		x, ok := w.rc.Reconciler().Expectations().Get(key)
		exp := "none"
		if ok {
			exp = fmt.Sprintf("add %d del %d since +%v", x.Add, x.Del, x.Timestamp.Sub(epoch))
		}
		fmt.Fprintf(&b, "  rs %s at %s (uid %s): %s, behind its own write: %v, expectations: %s\n", rs.Name, rs.ResourceVersion, rs.UID,
			cached, w.rsInf.Cache().Behind(key), exp)
	}
	fmt.Fprintf(&b, "  clock: %d timers pending; unfinished work: %q\n", w.fc.Waiters(), w.fc.Busy())
	return b.String()
}
