package replicaset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// nilReader is a ReplicaSet cache that answers nil with no error: Get
// returns a nil ReplicaSet, List a nil entry.
type nilReader struct{}

func (nilReader) Get(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return nil, nil
}

func (nilReader) List(context.Context, string, labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return []*appsv1.ReplicaSet{nil}, nil
}

// TestEventRulesBadInput calls every EventRules method with every
// combination of nil, empty and partially filled objects, for rules with a
// cache, without one (the zero value) and with a cache that answers nil.
// No call panics or modifies its arguments; a nil object asks for nothing;
// every observation is of a key the call enqueues; rules that cannot
// resolve a ReplicaSet enqueue nothing for a pod; ReplicaSet events sync
// their own key whatever the cache.
func TestEventRulesBadInput(t *testing.T) {
	w := newWorld(t0)
	web := w.addRS(newRS("web", 2))
	ctrl := true
	ref := func(kind, name string, uid types.UID, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: controller}}
	}
	pod := func(rv string, edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: "p-uid", ResourceVersion: rv}}
		edit(p)
		return p
	}
	pods := map[string]*corev1.Pod{
		"nil":                  nil,
		"empty":                {},
		"owned":                pod("1", func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "web", web.UID, &ctrl) }),
		"owned, ready":         pod("2", func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "web", web.UID, &ctrl); markReady(p) }),
		"owned, deleting":      pod("3", func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "web", web.UID, &ctrl); markDeleting(p) }),
		"owned, no namespace":  pod("4", func(p *corev1.Pod) { p.Namespace = ""; p.OwnerReferences = ref("ReplicaSet", "web", web.UID, &ctrl) }),
		"owned, other UID":     pod("5", func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "web", "other", &ctrl) }),
		"empty controller ref": pod("6", func(p *corev1.Pod) { p.OwnerReferences = ref("", "", "", &ctrl) }),
		"owner, not controller": pod("7", func(p *corev1.Pod) {
			p.OwnerReferences = ref("ReplicaSet", "web", web.UID, nil)
			p.Labels = map[string]string{"app": "web"}
		}),
		"orphan, matching":      pod("8", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} }),
		"orphan, deleting":      pod("9", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"}; markDeleting(p) }),
		"orphan, no labels":     pod("10", func(p *corev1.Pod) {}),
		"orphan, same RV as 10": pod("10", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} }),
	}
	rss := map[string]*appsv1.ReplicaSet{
		"nil":   nil,
		"empty": {},
		"web":   web,
		"web, new UID": func() *appsv1.ReplicaSet {
			r := web.DeepCopy()
			r.UID = "new"
			return r
		}(),
		"no selector": newRS("web", 2, noSelector),
		"deleting":    newRS("web", 2, func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = &metav1.Time{Time: t0} }),
	}
	type rulesCase struct {
		rules    replicaset.EventRules
		resolves bool // a pod event can resolve a ReplicaSet
	}
	allRules := map[string]rulesCase{
		"cache":    {replicaset.EventRules{ReplicaSets: rsReader{w}}, true},
		"zero":     {replicaset.EventRules{}, false},
		"nil read": {replicaset.EventRules{ReplicaSets: nilReader{}}, false},
	}
	ctx := context.Background()
	cached := func(k types.NamespacedName) bool { return k == key("web") }

	// check runs one call and checks the invariants every rule keeps.
	check := func(t *testing.T, name string, args []any, rc rulesCase, pods bool, call func() ([]reconcile.Enqueue, []replicaset.Observation)) (es []reconcile.Enqueue, obs []replicaset.Observation) {
		t.Helper()
		before := make([]any, len(args))
		for i, a := range args {
			before[i] = deepCopy(a)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: panicked: %v", name, r)
				}
			}()
			es, obs = call()
		}()
		for i, a := range args {
			if diff := cmp.Diff(before[i], a); diff != "" {
				t.Errorf("%s: argument %d modified (-before +after):\n%s", name, i, diff)
			}
		}
		for _, a := range args {
			if isNil(a) && (len(es) != 0 || len(obs) != 0) {
				t.Errorf("%s: a nil object asked for %v %v; want nothing", name, es, obs)
			}
		}
		keys := map[types.NamespacedName]bool{}
		for _, e := range es {
			keys[e.Key] = true
			if pods && !cached(e.Key) {
				t.Errorf("%s: enqueued %v, which is not a cached ReplicaSet", name, e)
			}
		}
		for _, o := range obs {
			if !keys[o.ReplicaSet] {
				t.Errorf("%s: observation %v of a key not enqueued (%v)", name, o, es)
			}
		}
		if pods && !rc.resolves && (len(es) != 0 || len(obs) != 0) {
			t.Errorf("%s: rules without a usable cache asked for %v %v; want nothing", name, es, obs)
		}
		return es, obs
	}

	for rn, rc := range allRules {
		t.Run(rn, func(t *testing.T) {
			r := rc.rules
			for n, rs := range rss {
				es, obs := check(t, "ReplicaSetAdded("+n+")", []any{rs}, rc, false, func() ([]reconcile.Enqueue, []replicaset.Observation) {
					return r.ReplicaSetAdded(ctx, rs)
				})
				if rs != nil && fmt.Sprint(es, obs) != fmt.Sprint([]reconcile.Enqueue{{Key: keyOf(rs)}}, []replicaset.Observation(nil)) {
					t.Errorf("ReplicaSetAdded(%s) = %v %v; want its own key", n, es, obs)
				}
				es, obs = check(t, "ReplicaSetDeleted("+n+")", []any{rs}, rc, false, func() ([]reconcile.Enqueue, []replicaset.Observation) {
					return r.ReplicaSetDeleted(ctx, rs)
				})
				if rs != nil && (len(es) != 1 || es[0].Key != keyOf(rs) || len(obs) != 1 || obs[0].Kind != replicaset.ReplicaSetGone) {
					t.Errorf("ReplicaSetDeleted(%s) = %v %v; want its own key, gone", n, es, obs)
				}
				for m, cur := range rss {
					es, _ := check(t, "ReplicaSetUpdated("+n+", "+m+")", []any{rs, cur}, rc, false, func() ([]reconcile.Enqueue, []replicaset.Observation) {
						return r.ReplicaSetUpdated(ctx, rs, cur)
					})
					if rs != nil && cur != nil && (len(es) == 0 || es[len(es)-1].Key != keyOf(cur)) {
						t.Errorf("ReplicaSetUpdated(%s, %s) = %v; want the current key last", n, m, es)
					}
				}
			}
			for n, p := range pods {
				check(t, "PodAdded("+n+")", []any{p}, rc, true, func() ([]reconcile.Enqueue, []replicaset.Observation) {
					return r.PodAdded(ctx, p)
				})
				check(t, "PodDeleted("+n+")", []any{p}, rc, true, func() ([]reconcile.Enqueue, []replicaset.Observation) {
					return r.PodDeleted(ctx, p)
				})
				for m, cur := range pods {
					check(t, "PodUpdated("+n+", "+m+")", []any{p, cur}, rc, true, func() ([]reconcile.Enqueue, []replicaset.Observation) {
						return r.PodUpdated(ctx, p, cur)
					})
				}
			}
		})
	}
}

// TestEventRulesWithoutCacheLog checks that the zero EventRules says why a
// pod event asks for nothing, in the context's logger.
func TestEventRulesWithoutCacheLog(t *testing.T) {
	var lines []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	rs := newRS("web", 1)
	es, obs := replicaset.EventRules{}.PodAdded(ctx, newPod("a", ownedBy(rs)))
	if len(es) != 0 || len(obs) != 0 {
		t.Errorf("PodAdded = %v %v; want nothing", es, obs)
	}
	if got := strings.Join(lines, "\n"); !strings.Contains(got, "EventRules.ReplicaSets is nil") {
		t.Errorf("logs = %q; want an error naming EventRules.ReplicaSets", got)
	}
	lines = nil
	replicaset.EventRules{}.ReplicaSetAdded(ctx, rs)
	if len(lines) != 0 {
		t.Errorf("ReplicaSetAdded logged %q; a ReplicaSet event needs no cache", lines)
	}
}

func deepCopy(a any) any {
	switch v := a.(type) {
	case *corev1.Pod:
		return v.DeepCopy()
	case *appsv1.ReplicaSet:
		return v.DeepCopy()
	}
	panic(fmt.Sprintf("deepCopy: %T", a))
}

func isNil(a any) bool {
	switch v := a.(type) {
	case *corev1.Pod:
		return v == nil
	case *appsv1.ReplicaSet:
		return v == nil
	}
	return a == nil
}

func markReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func markDeleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }
