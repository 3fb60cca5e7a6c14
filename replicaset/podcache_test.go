package replicaset_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/replicaset"
)

// PodCache.List answers selectors that pin pod-template-hash from an
// index: it must return exactly the pods a scan of the namespace returns.
func TestPodCacheListMatchesScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	c := informer.NewCache(informer.CacheConfig[*corev1.Pod]{})
	pc, err := replicaset.NewPodCache(c)
	if err != nil {
		t.Fatal(err)
	}
	hashKey := appsv1.DefaultDeploymentUniqueLabelKey
	for i := range 2000 {
		l := map[string]string{}
		if rnd.IntN(4) > 0 {
			l[hashKey] = fmt.Sprintf("h%d", rnd.IntN(5))
		}
		if rnd.IntN(2) == 0 {
			l["app"] = fmt.Sprintf("a%d", rnd.IntN(3))
		}
		if rnd.IntN(5) == 0 {
			l["tier"] = "web"
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", rnd.IntN(3)), Name: fmt.Sprintf("p%d", i), Labels: l}}
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	// Relabel some, so that the index follows updates.
	for i := 0; i < 2000; i += 7 {
		old, err := c.Get(types.NamespacedName{Namespace: "ns0", Name: fmt.Sprintf("p%d", i)})
		if err != nil {
			continue
		}
		p := old.DeepCopy()
		p.Labels = map[string]string{hashKey: "h9", "app": "a1"}
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	selectors := []string{
		hashKey + "=h1", hashKey + "==h2", hashKey + " in (h3)", hashKey + "=h9",
		hashKey + "=h1,app=a1", hashKey + "=h0,tier!=web", hashKey + "=h2,!tier",
		hashKey + " in (h1,h2)", hashKey + "!=h1", "app=a1", "", hashKey + "=nope",
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, s := range selectors {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"ns0", "ns1", "ns2", "ns9", ""} {
			got, err := pc.List(context.Background(), ns, sel)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := c.List(ns, sel)
			if diff := cmp.Diff(names(want), names(got)); diff != "" {
				t.Errorf("List(%q, %q) (-scan +PodCache):\n%s", ns, s, diff)
			}
		}
	}
}
