package webapp_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/examples/webapp"
	"github.com/ctrlkit/ctrlkit/memcluster"
)

// store is a tiny API for WebApps: resourceVersions, Conflict on a stale
// write, a count of writes.
type store struct {
	mu     sync.Mutex
	rv     int
	apps   map[types.NamespacedName]*webapp.WebApp
	writes []string // "status web", "spec web"
	// changed is the store's watch: called after every change.
	changed func(types.NamespacedName)
}

func (s *store) Get(_ context.Context, key types.NamespacedName) (*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.apps[key]
	if !ok {
		return nil, apierrors.NewNotFound(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), key.Name)
	}
	return w.DeepCopy(), nil
}

func (s *store) List(_ context.Context, ns string, sel labels.Selector) ([]*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*webapp.WebApp
	for _, w := range s.apps {
		if (ns == "" || w.Namespace == ns) && (sel == nil || sel.Matches(labels.Set(w.Labels))) {
			out = append(out, w.DeepCopy())
		}
	}
	return out, nil
}

// put stores w as a user would (a spec write bumps the generation).
func (s *store) put(w *webapp.WebApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	w = w.DeepCopy()
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	if old, ok := s.apps[key]; ok {
		w.Generation, w.UID, w.Status = old.Generation+1, old.UID, old.Status
	} else {
		w.Generation, w.UID = 1, types.UID("uid-"+w.Name)
	}
	w.ResourceVersion = strconv.Itoa(s.rv)
	s.apps[key] = w
	s.notify(key)
}

// notify calls changed for key; the caller holds mu.
func (s *store) notify(key types.NamespacedName) {
	if s.changed != nil {
		s.changed(key)
	}
}

func (s *store) write(w *webapp.WebApp, what string, apply func(stored, w *webapp.WebApp)) (*webapp.WebApp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	cur, ok := s.apps[key]
	if !ok {
		return nil, apierrors.NewNotFound(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), w.Name)
	}
	if cur.ResourceVersion != w.ResourceVersion {
		return nil, apierrors.NewConflict(webapp.Kind.GroupVersion().WithResource("webapps").GroupResource(), w.Name, errors.New("stale"))
	}
	next := cur.DeepCopy()
	apply(next, w)
	s.rv++
	next.ResourceVersion = strconv.Itoa(s.rv)
	s.apps[key] = next
	s.writes = append(s.writes, what+" "+w.Name)
	s.notify(key)
	return next.DeepCopy(), nil
}

func (s *store) UpdateWorkload(_ context.Context, w *webapp.WebApp) (*webapp.WebApp, error) {
	return s.write(w, "spec", func(next, w *webapp.WebApp) {
		next.Spec, next.Annotations = w.DeepCopy().Spec, maps.Clone(w.Annotations)
		next.Generation++
	})
}

func (s *store) UpdateWorkloadStatus(_ context.Context, w *webapp.WebApp) (*webapp.WebApp, error) {
	return s.write(w, "status", func(next, w *webapp.WebApp) {
		next.Status, next.Annotations = w.DeepCopy().Status, maps.Clone(w.Annotations)
	})
}

func (s *store) takeWrites() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writes
	s.writes = nil
	return w
}

// client writes WebApps to the store and ReplicaSets to the cluster.
type client struct {
	memcluster.ControllerClient
	*store
}
