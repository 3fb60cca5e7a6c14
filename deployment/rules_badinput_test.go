package deployment_test

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

	"github.com/ctrlkit/ctrlkit/deployment"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// nilDeployments and nilReplicaSets are caches that answer nil with no
// error: Get returns a nil object, List a nil entry.
type nilDeployments struct{}

func (nilDeployments) Get(context.Context, types.NamespacedName) (*appsv1.Deployment, error) {
	return nil, nil
}

func (nilDeployments) List(context.Context, string, labels.Selector) ([]*appsv1.Deployment, error) {
	return []*appsv1.Deployment{nil}, nil
}

type nilReplicaSets struct{}

func (nilReplicaSets) Get(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
	return nil, nil
}

// TestEventRulesBadInput calls every EventRules method with every
// combination of nil, empty and partially filled objects, for rules with
// caches, without them (the zero value), with one of the two, and with
// caches that answer nil. No call panics or modifies its arguments; a nil
// object asks for nothing; a Deployment event syncs its own key whatever
// the caches; a ReplicaSet or pod event syncs only cached Deployments, and
// nothing when it cannot resolve one.
func TestEventRulesBadInput(t *testing.T) {
	ctrl := true
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	ref := func(kind, name string, uid types.UID, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: controller}}
	}
	rs := func(rv string, edit func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs-uid", ResourceVersion: rv, Generation: 1,
			Labels: map[string]string{"app": "web"}, OwnerReferences: ref("Deployment", "web", "web-uid", &ctrl)}}
		edit(r)
		return r
	}
	webRS := rs("1", func(*appsv1.ReplicaSet) {})
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid", OwnerReferences: ref("ReplicaSet", "web-1", "rs-uid", &ctrl)}}
		edit(p)
		return p
	}
	ds := map[string]*appsv1.Deployment{"nil": nil, "empty": {}, "web": web}
	rss := map[string]*appsv1.ReplicaSet{
		"nil":                      nil,
		"empty":                    {},
		"owned":                    webRS,
		"owned, new generation":    rs("2", func(r *appsv1.ReplicaSet) { r.Generation = 2 }),
		"owned, deleting":          rs("3", func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = &metav1.Time{Time: t0} }),
		"owned, no namespace":      rs("4", func(r *appsv1.ReplicaSet) { r.Namespace = "" }),
		"owned, other UID":         rs("5", func(r *appsv1.ReplicaSet) { r.OwnerReferences = ref("Deployment", "web", "other", &ctrl) }),
		"empty controller ref":     rs("6", func(r *appsv1.ReplicaSet) { r.OwnerReferences = ref("", "", "", &ctrl) }),
		"owner, not controller":    rs("7", func(r *appsv1.ReplicaSet) { r.OwnerReferences = ref("Deployment", "web", "web-uid", nil) }),
		"orphan, matching":         rs("8", func(r *appsv1.ReplicaSet) { r.OwnerReferences = nil }),
		"orphan, no labels":        rs("9", func(r *appsv1.ReplicaSet) { r.OwnerReferences, r.Labels = nil, nil }),
		"orphan, same RV as above": rs("9", func(r *appsv1.ReplicaSet) { r.OwnerReferences = nil }),
	}
	pods := map[string]*corev1.Pod{
		"nil":                  nil,
		"empty":                {},
		"owned":                pod(func(*corev1.Pod) {}),
		"owned, no namespace":  pod(func(p *corev1.Pod) { p.Namespace = "" }),
		"owned, other UID":     pod(func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "web-1", "other", &ctrl) }),
		"owned, not cached":    pod(func(p *corev1.Pod) { p.OwnerReferences = ref("ReplicaSet", "gone", "gone-uid", &ctrl) }),
		"empty controller ref": pod(func(p *corev1.Pod) { p.OwnerReferences = ref("", "", "", &ctrl) }),
		"orphan":               pod(func(p *corev1.Pod) { p.OwnerReferences = nil }),
	}

	dCache, err := reconcile.FromCache(informer.NewCache(informer.CacheConfig[*appsv1.Deployment]{}))
	if err != nil {
		t.Fatal(err)
	}
	rsCache, err := reconcile.FromCache(informer.NewCache(informer.CacheConfig[*appsv1.ReplicaSet]{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := dCache.Cache().Add(web); err != nil {
		t.Fatal(err)
	}
	if err := rsCache.Cache().Add(webRS); err != nil {
		t.Fatal(err)
	}
	type rulesCase struct {
		rules            deployment.EventRules
		resolvesRS, pods bool // a ReplicaSet event, a pod event, can resolve a Deployment
	}
	allRules := map[string]rulesCase{
		"caches":               {deployment.EventRules{Deployments: dCache, ReplicaSets: rsCache}, true, true},
		"zero":                 {deployment.EventRules{}, false, false},
		"no ReplicaSets cache": {deployment.EventRules{Deployments: dCache}, true, false},
		"no Deployments cache": {deployment.EventRules{ReplicaSets: rsCache}, false, false},
		"nil reads":            {deployment.EventRules{Deployments: nilDeployments{}, ReplicaSets: nilReplicaSets{}}, false, false},
	}
	ctx := context.Background()
	webKey := types.NamespacedName{Namespace: "ns", Name: "web"}

	// check runs one call and checks the invariants every rule keeps.
	check := func(t *testing.T, name string, args []any, resolves bool, call func() []reconcile.Enqueue) (es []reconcile.Enqueue) {
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
			es = call()
		}()
		for i, a := range args {
			if diff := cmp.Diff(before[i], a); diff != "" {
				t.Errorf("%s: argument %d modified (-before +after):\n%s", name, i, diff)
			}
		}
		for _, a := range args {
			if isNil(a) && len(es) != 0 {
				t.Errorf("%s: a nil object asked for %v; want nothing", name, es)
			}
		}
		if !resolves && len(es) != 0 {
			t.Errorf("%s: rules that cannot resolve a Deployment asked for %v; want nothing", name, es)
		}
		for _, e := range es {
			if e.Key != webKey {
				t.Errorf("%s: enqueued %v, which is not a cached Deployment", name, e)
			}
		}
		return es
	}

	for rn, rc := range allRules {
		t.Run(rn, func(t *testing.T) {
			r := rc.rules
			for n, d := range ds {
				for _, c := range []struct {
					name string
					call func() []reconcile.Enqueue
				}{
					{"DeploymentAdded(" + n + ")", func() []reconcile.Enqueue { return r.DeploymentAdded(ctx, d) }},
					{"DeploymentDeleted(" + n + ")", func() []reconcile.Enqueue { return r.DeploymentDeleted(ctx, d) }},
				} {
					es := c.call()
					want := "[]"
					if d != nil {
						want = fmt.Sprint([]reconcile.Enqueue{{Key: deployment.KeyOf(d)}})
					}
					if fmt.Sprint(es) != want {
						t.Errorf("%s = %v; want %s", c.name, es, want)
					}
				}
				for m, cur := range ds {
					es := r.DeploymentUpdated(ctx, d, cur)
					want := "[]"
					if d != nil && cur != nil {
						want = fmt.Sprint([]reconcile.Enqueue{{Key: deployment.KeyOf(cur)}})
					}
					if fmt.Sprint(es) != want {
						t.Errorf("DeploymentUpdated(%s, %s) = %v; want %s", n, m, es, want)
					}
				}
			}
			for n, x := range rss {
				check(t, "ReplicaSetAdded("+n+")", []any{x}, rc.resolvesRS, func() []reconcile.Enqueue { return r.ReplicaSetAdded(ctx, x) })
				check(t, "ReplicaSetDeleted("+n+")", []any{x}, rc.resolvesRS, func() []reconcile.Enqueue { return r.ReplicaSetDeleted(ctx, x) })
				for m, cur := range rss {
					check(t, "ReplicaSetUpdated("+n+", "+m+")", []any{x, cur}, rc.resolvesRS, func() []reconcile.Enqueue {
						return r.ReplicaSetUpdated(ctx, x, cur)
					})
				}
			}
			for n, p := range pods {
				check(t, "PodDeleted("+n+")", []any{p}, rc.pods, func() []reconcile.Enqueue { return r.PodDeleted(ctx, p) })
			}
			if rc.pods {
				if es := r.PodDeleted(ctx, pods["owned"]); fmt.Sprint(es) != "[sync ns/web (batch)]" {
					t.Errorf("PodDeleted(owned) = %v; want the Recreate Deployment", es)
				}
			}
		})
	}
}

// TestEventRulesWithoutCacheLog checks that the zero EventRules says why a
// ReplicaSet or pod event asks for nothing, in the context's logger.
func TestEventRulesWithoutCacheLog(t *testing.T) {
	var lines []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	ctrl := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: &ctrl}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", Controller: &ctrl}}}}
	var r deployment.EventRules
	for _, c := range []struct {
		name, field string
		call        func() []reconcile.Enqueue
	}{
		{"ReplicaSetAdded", "EventRules.Deployments is nil", func() []reconcile.Enqueue { return r.ReplicaSetAdded(ctx, rs) }},
		{"PodDeleted", "EventRules.ReplicaSets is nil", func() []reconcile.Enqueue { return r.PodDeleted(ctx, pod) }},
	} {
		lines = nil
		if es := c.call(); len(es) != 0 {
			t.Errorf("%s = %v; want nothing", c.name, es)
		}
		if got := strings.Join(lines, "\n"); !strings.Contains(got, c.field) {
			t.Errorf("%s logs = %q; want an error containing %q", c.name, got, c.field)
		}
	}
	lines = nil
	r.DeploymentAdded(ctx, &appsv1.Deployment{})
	if len(lines) != 0 {
		t.Errorf("DeploymentAdded logged %q; a Deployment event needs no cache", lines)
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
