package controllerruntime

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// skippedSyncsName is the series of the syncs each controller skipped
// while the manager's cache lagged behind its own writes, as package kube
// names it (ctrlkit_syncs_skipped_total{controller}).
const skippedSyncsName = "ctrlkit_syncs_skipped_total"

// skippedSyncs returns the counter of the syncs skipped by the controller
// named name (the label controller, as controller-runtime's own series
// name it). The series is registered on controller-runtime's
// metrics.Registry, which a Manager serves, or the one already there is
// used (an earlier Add, or a kube.Metrics registered on it: the name,
// help and label are kube's).
func skippedSyncs(name string) (prometheus.Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: skippedSyncsName,
		Help: "Keys taken from the work queue and not synced because the cache still held a version the controller's own last write replaced."},
		[]string{"controller"})
	if err := metrics.Registry.Register(vec); err != nil {
		var are prometheus.AlreadyRegisteredError
		existing, ok := (*prometheus.CounterVec)(nil), false
		if errors.As(err, &are) {
			existing, ok = are.ExistingCollector.(*prometheus.CounterVec)
		}
		if !ok {
			return nil, fmt.Errorf("controllerruntime: registering %s: %w", skippedSyncsName, err)
		}
		vec = existing
	}
	return vec.WithLabelValues(name), nil
}
