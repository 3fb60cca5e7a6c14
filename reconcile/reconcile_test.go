package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestTerminal(t *testing.T) {
	if reconcile.Terminal(nil) != nil {
		t.Error("Terminal(nil) != nil")
	}
	base := errors.New("boom")
	err := reconcile.Terminal(base)
	if !errors.Is(err, reconcile.ErrTerminal) || !errors.Is(err, base) || !reconcile.IsTerminal(err) {
		t.Errorf("Terminal(%v) = %v: Is(ErrTerminal)=%v Is(base)=%v", base, err, errors.Is(err, reconcile.ErrTerminal), errors.Is(err, base))
	}
	if reconcile.IsTerminal(base) || reconcile.IsTerminal(nil) {
		t.Error("IsTerminal holds for a plain error or nil")
	}
}

func TestFromCacheNil(t *testing.T) {
	if _, err := reconcile.FromCache[*appsv1.ReplicaSet](nil); err == nil {
		t.Error("FromCache(nil) succeeded; want an error")
	}
}

func TestFuncAdapters(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	res, err := reconcile.Func(func(_ context.Context, k types.NamespacedName) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}).Reconcile(ctx, key)
	if err != nil || res.RequeueAfter != time.Second {
		t.Errorf("Func.Reconcile = %v, %v", res, err)
	}
	_, err = reconcile.GetterFunc[*appsv1.Deployment](func(_ context.Context, k types.NamespacedName) (*appsv1.Deployment, error) {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), k.Name)
	}).Get(ctx, key)
	if !apierrors.IsNotFound(err) {
		t.Errorf("GetterFunc.Get err = %v; want NotFound", err)
	}
	if s := (reconcile.Enqueue{Key: key, After: time.Second, Batch: true}).String(); s != "sync ns/web after 1s (batch)" {
		t.Errorf("Enqueue.String() = %q", s)
	}
}
