package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/kube"
	"github.com/ctrlkit/ctrlkit/shard"
)

// Sharding is off by default; --shard takes kube-controller-manager's
// leader-election durations; bad combinations are refused by name.
func TestShardFlags(t *testing.T) {
	o, err := parseFlags("ctrlkit-controller", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := o.sharding(); s != nil || err != nil {
		t.Errorf("defaults: sharding %+v, %v; want off", s, err)
	}
	o, err = parseFlags("ctrlkit-controller", []string{"--shard", "--shard-identity=r1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.sharding()
	if err != nil {
		t.Fatal(err)
	}
	want := &kube.Sharding{Group: "ctrlkit-controller", Identity: "r1", Namespace: "kube-system", Ranges: 16,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Layout: shard.LayoutNamespaces, Selector: kube.SelectorAuto}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--shard mismatch (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "--leader-elect"}, "--shard runs every replica at once; --leader-elect runs one: choose one"},
		{[]string{"--shard", "--namespace=a"}, "--shard shares every namespace among the replicas; it cannot be combined with --namespace"},
		{[]string{"--shard", "--shard-ranges=0"}, "--shard-ranges is 0: the hash space needs at least 1 range"},
		{[]string{"--shard", "--shard-renew-deadline=0s"}, "--shard-lease-duration, --shard-renew-deadline and --shard-retry-period must be positive"},
	} {
		o, err := parseFlags("ctrlkit-controller", c.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", c.args, err)
		}
		if _, err := o.sharding(); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
		}
	}
}
