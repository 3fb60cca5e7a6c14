package replicaset_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
)

// TestReconcileLogs checks that a sync logs its start and end at V(4),
// with upstream's keys, to the logger in the context.
func TestReconcileLogs(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 4})
	w := newWorld(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newReconciler(t, w, false)
	ctx := logr.NewContext(context.Background(), log)
	if _, err := r.Reconcile(ctx, types.NamespacedName{Namespace: "ns", Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{`"msg"="Started syncing"`, `"msg"="Finished syncing"`, `"kind"="ReplicaSet"`, `"key"="ns/gone"`, `"duration"=`} {
		if !strings.Contains(got, want) {
			t.Errorf("logs lack %s:\n%s", want, got)
		}
	}
}
