//go:build e2e

package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/shard"
)

// TestShardSelectorLikeKubeAPIServer sends the same lists and watches
// with shard selectors, good and bad, to kube-apiserver v1.37.1 (gate on)
// and to memcluster, holding the same objects, and compares the answers:
// the objects, metadata.shardInfo, and for a bad selector the status
// code, reason and message (a CEL syntax error: the same prefix).
func TestShardSelectorLikeKubeAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	real := kubernetes.NewForConfigOrDie(cp.Config(100, 200))
	mc := memcluster.New(memcluster.Config{})
	memcluster.AddBuiltinKinds(mc)
	mem := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://memcluster", Transport: memcluster.Transport{Handler: memcluster.NewHandler(mc)}})
	var names []string
	for i := range 12 {
		ns := fmt.Sprintf("shard-sel-%02d-x", i)
		names = append(names, ns)
		for _, cs := range []kubernetes.Interface{real, mem} {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"test": "shard-sel"}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for _, ns := range names {
			_ = real.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
	halves, _ := shard.Split(2)
	quarters, _ := shard.Split(4)
	selectors := []string{
		shard.MustSet(halves[0]).Selector(),
		shard.MustSet(halves[1]).Selector(),
		shard.MustSet(quarters[0], quarters[2]).Selector(),
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		" shardRange( object.metadata.namespace,\"0x0000000000000000\" , '0x8000000000000000')",
		"shardRange(object.metadata.name, '0x00', '0x80')",
		"shardRange(object.metadata.namespace, '0x0', '0x8000000000000000')",
		"shardRange(object.metadata.namespace, '0x8000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
		"shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') && shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
		"shardRange(object.metadata.namespace, 0, 8)",
		"shardRange(object.metadata.namespace, '0x0000000000000000'",
		"namespace",
	}
	opts := func(sel string) metav1.ListOptions {
		return metav1.ListOptions{ShardSelector: sel, LabelSelector: "test=shard-sel"}
	}
	for _, sel := range selectors {
		rl, rerr := real.CoreV1().ConfigMaps("").List(ctx, opts(sel))
		ml, merr := mem.CoreV1().ConfigMaps("").List(ctx, opts(sel))
		switch {
		case rerr != nil && merr != nil:
			rs, ms := apiStatus(rerr), apiStatus(merr)
			same := rs.Code == ms.Code && rs.Reason == ms.Reason && rs.Message == ms.Message
			const syntax = "invalid shard selector: CEL parse error: "
			if strings.HasPrefix(rs.Message, syntax) {
				same = rs.Code == ms.Code && rs.Reason == ms.Reason && strings.HasPrefix(ms.Message, syntax)
			}
			if !same {
				t.Errorf("list with %q:\n  kube-apiserver: %d %q %q\n  memcluster:     %d %q %q", sel, rs.Code, rs.Reason, rs.Message, ms.Code, ms.Reason, ms.Message)
			}
		case rerr != nil || merr != nil:
			t.Errorf("list with %q: kube-apiserver %v, memcluster %v", sel, rerr, merr)
		default:
			// By UID the two clusters select different objects (their
			// UIDs differ): each is checked against the hash instead.
			if r, m := namespaces(rl.Items), namespaces(ml.Items); !slices.Equal(r, m) && !strings.Contains(sel, "uid") {
				t.Errorf("list with %q: kube-apiserver %v, memcluster %v", sel, r, m)
			}
			if strings.Contains(sel, "uid") {
				for _, l := range []*corev1.ConfigMapList{rl, ml} {
					for _, cm := range l.Items {
						if h := shard.Hash(string(cm.UID)); h >= 1<<63 {
							t.Errorf("list with %q: %s/%s, UID hash %#x outside the range", sel, cm.Namespace, cm.Name, h)
						}
					}
				}
			}
			if r, m := rl.ShardInfo, ml.ShardInfo; (r == nil) != (m == nil) || (r != nil && r.Selector != m.Selector) {
				t.Errorf("list with %q: shardInfo %+v on kube-apiserver, %+v on memcluster", sel, r, m)
			}
			if !strings.Contains(sel, "uid") {
				set, err := shard.ParseSelector(sel)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, ns := range names {
					if set.ContainsNamespace(ns) {
						want = append(want, ns)
					}
				}
				if got := namespaces(rl.Items); !slices.Equal(want, got) {
					t.Errorf("list with %q: kube-apiserver %v; shard.Set says %v", sel, got, want)
				}
			}
		}
	}
	// A watch: the events of the range only, on both.
	sel := shard.MustSet(halves[1]).Selector()
	var got [2][]string
	for i, cs := range []kubernetes.Interface{real, mem} {
		l, err := cs.CoreV1().ConfigMaps("").List(ctx, opts(""))
		if err != nil {
			t.Fatal(err)
		}
		w, err := cs.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion, ShardSelector: sel, LabelSelector: "test=shard-sel"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range names {
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm2", Labels: map[string]string{"test": "shard-sel"}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		want := 0
		set := shard.MustSet(halves[1])
		for _, ns := range names {
			if set.ContainsNamespace(ns) {
				want++
			}
		}
		timeout := time.After(30 * time.Second)
		for len(got[i]) < want {
			select {
			case ev := <-w.ResultChan():
				ns := ev.Object.(*corev1.ConfigMap).Namespace
				if !set.ContainsNamespace(ns) {
					t.Errorf("watch with %q: an event of %s, outside the range", sel, ns)
				}
				got[i] = append(got[i], ns)
			case <-timeout:
				t.Fatalf("watch with %q: %d events after 30s, want %d", sel, len(got[i]), want)
			}
		}
		w.Stop()
		slices.Sort(got[i])
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("watch with %q: kube-apiserver %v, memcluster %v", sel, got[0], got[1])
	}
}

func apiStatus(err error) metav1.Status {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status()
	}
	return metav1.Status{Message: err.Error()}
}

func namespaces(items []corev1.ConfigMap) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Namespace)
	}
	slices.Sort(out)
	return out
}
