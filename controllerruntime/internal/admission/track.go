package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration"
	admissionregistrationv1informers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// A configuration takes effect in kube-apiserver once its informers have
// seen it, a moment after it is stored; in the bench it takes effect for
// the next write: the admission follows the cluster's writes of webhook
// configurations and namespaces (Wrote), and admits a request once every
// handler the webhook plugins registered on their informers (and its own
// on the namespaces) has handled the latest of them. Policies are the
// exception: their plugin compiles them anew every second, as in
// kube-apiserver, so a policy or binding takes effect within a second.

// caughtUpBound bounds the wait for the informers: beyond it a request is
// admitted with what they have (as kube-apiserver admits with its
// informers' state).
const caughtUpBound = 10 * time.Second

// trackedResources are the resources whose latest write a request waits
// for.
var trackedResources = map[string]bool{"mutatingwebhookconfigurations": true, "validatingwebhookconfigurations": true, "namespaces": true}

type tracker struct {
	mu       sync.Mutex
	progress chan struct{}     // closed (and replaced) when a handler sees a write
	configs  int               // configuration objects stored
	latest   map[string]uint64 // resource: the version of its latest write
	seen     map[string][]uint64
	regs     []cache.ResourceEventHandlerRegistration // the handlers tracked
	// handled is closed for a resource once a handler is registered on its
	// informer (see started).
	handled map[string]chan struct{}
}

func newTracker() tracker {
	return tracker{progress: make(chan struct{}), latest: map[string]uint64{}, seen: map[string][]uint64{}, handled: map[string]chan struct{}{}}
}

func (t *tracker) wrote(w memcluster.Write) {
	admissionKind := false
	for _, gr := range admissionResources {
		admissionKind = admissionKind || gr.Resource == w.Resource
	}
	if !admissionKind && !trackedResources[w.Resource] {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if trackedResources[w.Resource] {
		t.latest[w.Resource] = w.ResourceVersion
	}
	if admissionKind {
		switch w.Type {
		case watch.Added:
			t.configs++
		case watch.Deleted:
			t.configs--
		}
	}
}

// configured reports whether any configuration of admission is stored.
func (t *tracker) configured() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.configs > 0
}

// versions returns the latest version of each tracked resource.
func (t *tracker) versions() map[string]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]uint64, len(t.latest))
	for r, v := range t.latest {
		out[r] = v
	}
	return out
}

// handler registers a handler of resource and returns its number.
func (t *tracker) handler(resource string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[resource] = append(t.seen[resource], 0)
	return len(t.seen[resource]) - 1
}

// saw records that handler id of resource has handled an object of
// version rv.
func (t *tracker) saw(resource string, id int, rv uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rv > t.seen[resource][id] {
		t.seen[resource][id] = rv
		close(t.progress)
		t.progress = make(chan struct{})
	}
}

// listed records that every handler has its initial list, made after the
// writes of versions.
func (t *tracker) listed(ctx context.Context, versions map[string]uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for r, seen := range t.seen {
		for id := range seen {
			seen[id] = max(seen[id], versions[r])
		}
	}
	return ctx.Err()
}

// caughtUp waits until every handler has handled the latest write of its
// resource (or caughtUpBound has passed).
func (t *tracker) caughtUp(ctx context.Context) error {
	timeout := time.NewTimer(caughtUpBound)
	defer timeout.Stop()
	for {
		t.mu.Lock()
		behind := false
		for r, seen := range t.seen {
			for _, v := range seen {
				behind = behind || v < t.latest[r]
			}
		}
		progress := t.progress
		t.mu.Unlock()
		if !behind {
			return nil
		}
		select {
		case <-progress:
		case <-timeout.C:
			return nil
		case <-ctx.Done():
			return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
		}
	}
}

// trackedHandler tells the tracker what a handler has handled, once it
// has.
type trackedHandler struct {
	next     cache.ResourceEventHandler
	t        *tracker
	resource string
	id       int
}

func (h trackedHandler) OnAdd(obj any, initial bool) {
	h.next.OnAdd(obj, initial)
	h.t.saw(h.resource, h.id, versionOf(obj))
}

func (h trackedHandler) OnUpdate(old, obj any) {
	h.next.OnUpdate(old, obj)
	h.t.saw(h.resource, h.id, versionOf(obj))
}

func (h trackedHandler) OnDelete(obj any) {
	h.next.OnDelete(obj)
	h.t.saw(h.resource, h.id, versionOf(obj))
}

func versionOf(obj any) uint64 {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	return v
}

// trackedInformer registers its handlers with the tracker.
type trackedInformer struct {
	cache.SharedIndexInformer
	t        *tracker
	resource string
}

func (i trackedInformer) wrap(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	defer i.t.handlerAdded(i.resource)
	return trackedHandler{next: h, t: i.t, resource: i.resource, id: i.t.handler(i.resource)}
}

// handledChan returns the channel closed once a handler is registered on
// the informer of resource.
func (t *tracker) handledChan(resource string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, ok := t.handled[resource]
	if !ok {
		ch = make(chan struct{})
		t.handled[resource] = ch
	}
	return ch
}

func (t *tracker) handlerAdded(resource string) {
	ch := t.handledChan(resource)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// started waits until a handler is registered on the informers of the
// policies: a policy plugin's source registers its handlers once it has
// listed the policies and bindings and compiled them, and is ready then
// (the plugin polls for that every 100 ms; waiting for the registration
// instead keeps a bench in virtual time from racing with the poll).
func (t *tracker) started(ctx context.Context, resources ...string) error {
	for _, r := range resources {
		select {
		case <-t.handledChan(r):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (i trackedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.t.registered(i.SharedIndexInformer.AddEventHandler(i.wrap(h)))
}

func (i trackedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.t.registered(i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.wrap(h), resync))
}

func (i trackedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.t.registered(i.SharedIndexInformer.AddEventHandlerWithOptions(i.wrap(h), opts))
}

// registered keeps reg, to wait for its initial list.
func (t *tracker) registered(reg cache.ResourceEventHandlerRegistration, err error) (cache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		t.mu.Lock()
		t.regs = append(t.regs, reg)
		t.mu.Unlock()
	}
	return reg, err
}

// synced returns what tells when every handler tracked has its initial
// list.
func (t *tracker) synced() []cache.DoneChecker {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []cache.DoneChecker
	for _, reg := range t.regs {
		out = append(out, reg.HasSyncedChecker())
	}
	return out
}

// trackedFactory is the informer factory the plugins get: the informers
// of webhook configurations register the plugins' handlers with the
// tracker.
type trackedFactory struct {
	informers.SharedInformerFactory
	t *tracker
}

func (f trackedFactory) Admissionregistration() admissionregistrationinformers.Interface {
	return trackedGroup{f.SharedInformerFactory.Admissionregistration(), f.t}
}

type trackedGroup struct {
	admissionregistrationinformers.Interface
	t *tracker
}

func (g trackedGroup) V1() admissionregistrationv1informers.Interface {
	return trackedV1{g.Interface.V1(), g.t}
}

type trackedV1 struct {
	admissionregistrationv1informers.Interface
	t *tracker
}

func (v trackedV1) MutatingWebhookConfigurations() admissionregistrationv1informers.TypedMutatingWebhookConfigurationInformer {
	return trackedMutating{v.Interface.MutatingWebhookConfigurations(), v.t}
}

func (v trackedV1) ValidatingWebhookConfigurations() admissionregistrationv1informers.TypedValidatingWebhookConfigurationInformer {
	return trackedValidating{v.Interface.ValidatingWebhookConfigurations(), v.t}
}

func (v trackedV1) ValidatingAdmissionPolicies() admissionregistrationv1informers.TypedValidatingAdmissionPolicyInformer {
	return trackedValidatingPolicies{v.Interface.ValidatingAdmissionPolicies(), v.t}
}

func (v trackedV1) MutatingAdmissionPolicies() admissionregistrationv1informers.TypedMutatingAdmissionPolicyInformer {
	return trackedMutatingPolicies{v.Interface.MutatingAdmissionPolicies(), v.t}
}

type trackedValidatingPolicies struct {
	admissionregistrationv1informers.TypedValidatingAdmissionPolicyInformer
	t *tracker
}

func (i trackedValidatingPolicies) Informer() cache.SharedIndexInformer {
	return trackedInformer{i.TypedValidatingAdmissionPolicyInformer.Informer(), i.t, "validatingadmissionpolicies"}
}

type trackedMutatingPolicies struct {
	admissionregistrationv1informers.TypedMutatingAdmissionPolicyInformer
	t *tracker
}

func (i trackedMutatingPolicies) Informer() cache.SharedIndexInformer {
	return trackedInformer{i.TypedMutatingAdmissionPolicyInformer.Informer(), i.t, "mutatingadmissionpolicies"}
}

type trackedMutating struct {
	admissionregistrationv1informers.TypedMutatingWebhookConfigurationInformer
	t *tracker
}

func (i trackedMutating) Informer() cache.SharedIndexInformer {
	return trackedInformer{i.TypedMutatingWebhookConfigurationInformer.Informer(), i.t, "mutatingwebhookconfigurations"}
}

type trackedValidating struct {
	admissionregistrationv1informers.TypedValidatingWebhookConfigurationInformer
	t *tracker
}

func (i trackedValidating) Informer() cache.SharedIndexInformer {
	return trackedInformer{i.TypedValidatingWebhookConfigurationInformer.Informer(), i.t, "validatingwebhookconfigurations"}
}
