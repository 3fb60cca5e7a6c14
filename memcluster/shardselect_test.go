package memcluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
)

// halves are the two halves of the hash space.
var halves = [2][2]string{{"0x0000000000000000", "0x8000000000000000"}, {"0x8000000000000000", "0x10000000000000000"}}

func shardRange(field string, r [2]string) string {
	return fmt.Sprintf("shardRange(%s, '%s', '%s')", field, r[0], r[1])
}

// inRange is the oracle: apimachinery's hash and comparison.
func inRange(value string, r [2]string) bool {
	h := "0x" + sharding.HashField(value)
	return !sharding.HexLess(h, r[0]) && sharding.HexLess(h, r[1])
}

// podsInNamespaces creates one pod in each of n namespaces.
func podsInNamespaces(t *testing.T, c *Cluster, n int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for i := range n {
		// Names that spread over the hash space: FNV-1a puts similar
		// short names (ns-00, ns-01, …) in a narrow band of it.
		ns := fmt.Sprintf("tenant-%04d-prod", i)
		out = append(out, must(c.Pods(ns).Create(ctxT(t), podIn(ns, "p"), metav1.CreateOptions{}))(t))
	}
	return out
}

func keys(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// A list with a shard selector returns exactly the objects whose field
// hashes into a range, says so in shardInfo, and paginates without a
// remaining count.
func TestShardedList(t *testing.T) {
	c, _ := newTestCluster(t)
	pods := podsInNamespaces(t, c, 20)
	for _, field := range []string{"object.metadata.namespace", "object.metadata.uid"} {
		var seen []string
		for _, r := range halves {
			sel := shardRange(field, r)
			items, meta, err := c.Pods("").ListPage(ctxT(t), metav1.ListOptions{ShardSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			var want []*corev1.Pod
			for _, p := range pods {
				v := p.Namespace
				if field == "object.metadata.uid" {
					v = string(p.UID)
				}
				if inRange(v, r) {
					want = append(want, p)
				}
			}
			if diff := cmp.Diff(keys(want), keys(items)); diff != "" {
				t.Errorf("list %s mismatch (-want +got):\n%s", sel, diff)
			}
			if diff := cmp.Diff(&metav1.ShardInfo{Selector: sel}, meta.ShardInfo); diff != "" {
				t.Errorf("list %s: shardInfo mismatch (-want +got):\n%s", sel, diff)
			}
			seen = append(seen, keys(items)...)

			// Page by page: the same objects, and no remaining count.
			var paged []*corev1.Pod
			opts := metav1.ListOptions{ShardSelector: sel, Limit: 3}
			for {
				page, meta, err := c.Pods("").ListPage(ctxT(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				if meta.RemainingItemCount != nil {
					t.Errorf("a sharded page has remainingItemCount %d; kube-apiserver sets none", *meta.RemainingItemCount)
				}
				paged = append(paged, page...)
				if opts.Continue = meta.Continue; opts.Continue == "" {
					break
				}
			}
			if diff := cmp.Diff(keys(want), keys(paged)); diff != "" {
				t.Errorf("paginated list %s mismatch (-want +got):\n%s", sel, diff)
			}
		}
		slices.Sort(seen)
		if diff := cmp.Diff(keys(pods), seen); diff != "" {
			t.Errorf("the halves by %s do not partition the pods (-want +got):\n%s", field, diff)
		}
	}
}

// A watch with a shard selector sees the events of its range only.
func TestShardedWatch(t *testing.T) {
	c, _ := newTestCluster(t)
	rv := c.ResourceVersion()
	var ws [2]watch.Interface
	for i, r := range halves {
		w, err := c.Pods("").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: rv, ShardSelector: shardRange("object.metadata.namespace", r)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		ws[i] = w
	}
	pods := podsInNamespaces(t, c, 12)
	for _, p := range pods {
		zero := int64(0)
		if err := c.Pods(p.Namespace).Delete(ctxT(t), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range halves {
		// Each pod of the range is added, then deleted (the delete first
		// writes its deletionTimestamp: a MODIFIED event before DELETED).
		var want, got []string
		for _, p := range pods {
			if inRange(p.Namespace, r) {
				want = append(want, "ADDED "+p.Namespace, "DELETED "+p.Namespace)
			}
		}
		for len(got) < len(want) {
			ev := <-ws[i].ResultChan()
			ns := ev.Object.(*corev1.Pod).Namespace
			if !inRange(ns, r) {
				t.Errorf("watch of half %d: %s %s, out of its range", i, ev.Type, ns)
			}
			if ev.Type != watch.Modified {
				got = append(got, fmt.Sprintf("%s %s", ev.Type, ns))
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("watch of half %d mismatch (-want +got):\n%s", i, diff)
		}
	}
	// Nothing else arrived: one more pod in each half shows up next.
	for i, r := range halves {
		n := slices.IndexFunc(pods, func(p *corev1.Pod) bool { return inRange(p.Namespace, r) })
		if n < 0 {
			t.Fatalf("no namespace of the test hashes into half %d", i)
		}
		must(c.Pods(pods[n].Namespace).Create(ctxT(t), podIn(pods[n].Namespace, "q"), metav1.CreateOptions{}))(t)
	}
	for i, r := range halves {
		ev := <-ws[i].ResultChan()
		if ns := ev.Object.(*corev1.Pod).Namespace; ev.Type != watch.Added || !inRange(ns, r) {
			t.Errorf("half %d: next event %s %s; want the new pod of its range", i, ev.Type, ns)
		}
	}
}

// A bad selector is refused as kube-apiserver refuses it, by the client
// API and over REST, for lists and watches; with the gate off it is
// ignored, as every other selector.
func TestShardSelectorRefused(t *testing.T) {
	c, _ := newTestCluster(t)
	podsInNamespaces(t, c, 3)
	bad := "shardRange(object.metadata.name, '0x00', '0x80')"
	want := `invalid shard selector: unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace`
	check := func(what string, err error) {
		t.Helper()
		st, ok := err.(apierrors.APIStatus)
		if !ok {
			t.Fatalf("%s: %v; want a Status error", what, err)
		}
		s := st.Status()
		if s.Code != http.StatusInternalServerError || s.Reason != metav1.StatusReasonUnknown || s.Message != want {
			t.Errorf("%s: code %d reason %q message %q; want 500, no reason, %q", what, s.Code, s.Reason, s.Message, want)
		}
	}
	_, _, err := c.Pods("").List(ctxT(t), metav1.ListOptions{ShardSelector: bad})
	check("List", err)
	_, err = c.Pods("ns-00").Watch(ctxT(t), metav1.ListOptions{ShardSelector: bad})
	check("Watch", err)

	rc := newRESTClient(t, c)
	for _, path := range []string{"/api/v1/pods?shardSelector=", "/api/v1/namespaces/ns-00/pods?watch=true&shardSelector="} {
		resp, body := rc.do(req{method: http.MethodGet, path: path + url.QueryEscape(bad)})
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusInternalServerError || st.Reason != "" || st.Message != want {
			t.Errorf("GET %s = %d %q %q; want 500, no reason, %q", path, resp.StatusCode, st.Reason, st.Message, want)
		}
	}

	off := New(Config{Clock: newFake(), NoShardedListAndWatch: true})
	pods := podsInNamespaces(t, off, 3)
	for _, sel := range []string{bad, shardRange("object.metadata.namespace", halves[0])} {
		items, meta, err := off.Pods("").ListPage(ctxT(t), metav1.ListOptions{ShardSelector: sel})
		if err != nil {
			t.Fatalf("gate off: list with %s: %v", sel, err)
		}
		if len(items) != len(pods) || meta.ShardInfo != nil {
			t.Errorf("gate off: list with %s = %d items, shardInfo %v; want all %d, none", sel, len(items), meta.ShardInfo, len(pods))
		}
	}
}

// Over REST a sharded list carries shardInfo (not a list of custom
// resources, as kube-apiserver's), and a watch list sends the range's
// objects only.
func TestHandlerShardSelector(t *testing.T) {
	c, _ := newTestCluster(t)
	pods := podsInNamespaces(t, c, 10)
	sel := shardRange("object.metadata.namespace", halves[1])
	rc := newRESTClient(t, c)
	_, body := rc.do(req{method: http.MethodGet, path: "/api/v1/pods?shardSelector=" + url.QueryEscape(sel)})
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range pods {
		if inRange(p.Namespace, halves[1]) {
			want = append(want, "ADDED Pod p")
		}
	}
	if len(list.Items) != len(want) || list.ShardInfo == nil || list.ShardInfo.Selector != sel {
		t.Errorf("list: %d items, shardInfo %v; want %d, %q", len(list.Items), list.ShardInfo, len(want), sel)
	}

	resp := openWatch(t, c, "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector="+url.QueryEscape(sel), "")
	got := jsonEvents(t, resp.Body, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch list mismatch (-want +got):\n%s", diff)
	}

	widgets := addWidgets(t, c)
	must(widgets.Namespace("tenant-0000-prod").Create(ctxT(t), &widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}))(t)
	_, body = rc.do(req{method: http.MethodGet, path: "/apis/example.com/v1/widgets?shardSelector=" + url.QueryEscape(shardRange("object.metadata.namespace", [2]string{"0x0000000000000000", "0x10000000000000000"}))})
	var wl map[string]any
	if err := json.Unmarshal(body, &wl); err != nil {
		t.Fatal(err)
	}
	md, _ := wl["metadata"].(map[string]any)
	if _, ok := md["shardInfo"]; ok || len(wl["items"].([]any)) != 1 {
		t.Errorf("list of custom resources = %s; want its one widget and no shardInfo", body)
	}
}
