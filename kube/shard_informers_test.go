package kube_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/memcluster"
	"github.com/ctrlkit/ctrlkit/shard"
)

// NewInformerControllers with a Shard: the factory built with ShardTweak
// receives only the set's namespaces (memcluster serves shardSelector),
// and the controllers sync only their Deployments.
func TestInformerControllersShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cfg, rec := newMemcluster(t, memcluster.Config{Seed: 1})
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := shard.Hash("mine")
		set := shard.MustSet(shard.Range{First: h, Last: h}) // namespace "mine" alone
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, kube.ShardTweak(set))
		ctl, err := kube.NewInformerControllers(factory, cs, kube.InformerOptions{Shard: set})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer factory.Shutdown()
		defer cancel()
		factory.Start(ctx.Done())
		done := make(chan error, 1)
		go func() { done <- ctl.Run(ctx) }()
		for _, ns := range []string{"mine", "theirs"} {
			if _, err := c.Deployments(ns).Create(ctx, webDeployment(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute) // virtual
		for ns, want := range map[string]int{"mine": 1, "theirs": 0} {
			rss, _, err := c.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rss) != want {
				t.Errorf("namespace %s: %d ReplicaSets; want %d", ns, len(rss), want)
			}
		}
		for _, r := range rec.requests() {
			if r.method == "GET" && (r.path == "/apis/apps/v1/deployments" || r.path == "/api/v1/pods") && !strings.Contains(r.query, "shardSelector=") {
				t.Errorf("%s %s?%s: the factory's informers list without the shard selector", r.method, r.path, r.query)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
