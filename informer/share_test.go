package informer_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/informer"
)

// sharingWatch records whether ShareObjects was called, and says when
// the consumer starts reading events (it decides before that).
type sharingWatch struct {
	watch.Interface
	shared  *atomic.Bool
	reading func()
}

func (w sharingWatch) ShareObjects() { w.shared.Store(true) }

func (w sharingWatch) ResultChan() <-chan watch.Event {
	w.reading()
	return w.Interface.ResultChan()
}

// The informer asks a SharingWatcher for shared objects, unless a
// Transform (which may modify what it gets) is set.
func TestInformerSharesOnlyWithoutTransform(t *testing.T) {
	for _, transform := range []bool{false, true} {
		var shared atomic.Bool
		reading := make(chan struct{})
		var once sync.Once
		lw := informer.ListWatchFuncs[*corev1.Pod]{
			ListFunc: func(context.Context) ([]*corev1.Pod, string, error) { return nil, "1", nil },
			WatchFunc: func(context.Context, string) (watch.Interface, error) {
				return sharingWatch{Interface: watch.NewFake(), shared: &shared,
					reading: func() { once.Do(func() { close(reading) }) }}, nil
			},
		}
		cfg := informer.Config[*corev1.Pod]{}
		if transform {
			cfg.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
		}
		inf := informer.New(lw, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = inf.Run(ctx) }()
		<-reading // the informer decided before it started to read
		cancel()
		<-done
		if got := shared.Load(); got == transform {
			t.Errorf("Transform set: %v; ShareObjects called: %v; want %v", transform, got, !transform)
		}
	}
}
