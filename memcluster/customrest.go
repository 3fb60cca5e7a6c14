package memcluster

import (
	"github.com/ctrlkit/ctrlkit/internal/gate"

	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// A customView serves one version of a custom kind over REST: requests
// come in that version, objects are stored in the storage version, and
// every object served is read from storage in the view's version, as
// kube-apiserver reads it from etcd.
type customView struct {
	ck      *customKind
	spec    *customSpec // as the view was built; conversions read the current one
	version *CustomVersion
}

var _ restStore = customView{}

// customViewsLocked returns the REST views of k if it is the store of a
// custom kind (one per served version, in the kind's order), else nil.
func (c *Cluster) customViewsLocked(k collector) []restStore {
	for _, ck := range c.customs {
		if collector(ck.res) != k {
			continue
		}
		spec := ck.spec.Load()
		views := []restStore{}
		for i := range spec.Versions {
			if v := &spec.Versions[i]; v.Served {
				views = append(views, customView{ck: ck, spec: spec, version: v})
			}
		}
		return views
	}
	return nil
}

func (v customView) info() restInfo {
	s := v.spec
	return restInfo{
		gvk:           s.gvk(v.version.Name),
		resource:      s.Plural,
		clusterScoped: s.ClusterScoped,
		status:        v.version.Status,
		newObj:        func() runtime.Object { return &unstructured.Unstructured{} },
		custom:        true,
		listKind:      s.ListKind,
		singular:      s.Singular,
		shortNames:    s.ShortNames,
		categories:    s.Categories,
		scale:         v.version.Scale,
		watchEvent:    v.watchEvent,
	}
}

// client is the kind's client of namespace ns for requests in the view's
// version.
func (v customView) client(ns string) Client[*unstructured.Unstructured] {
	cl := v.ck.res.Namespace(ns)
	cl.version = v.version.Name
	return cl
}

// check refuses a request the view cannot answer: a version that needs a
// conversion webhook.
func (v customView) check() error {
	s := v.ck.spec.Load()
	if s.WebhookConversion && v.version.Name != s.storage {
		return s.noWebhook(v.version.Name)
	}
	return nil
}

// out returns a stored object as read in the view's version.
func (v customView) out(obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return obj, nil
	}
	return v.ck.spec.Load().fromStorage(u, v.version.Name)
}

func (v customView) watchEvent(ev watch.Event) watch.Event {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return ev
	}
	if ev.Type == watch.Bookmark {
		b := u.DeepCopy()
		b.SetGroupVersionKind(v.spec.gvk(v.version.Name))
		ev.Object = b
		return ev
	}
	out, err := v.out(u)
	if err != nil {
		st := apiStatus(err)
		return watch.Event{Type: watch.Error, Object: &st}
	}
	ev.Object = out
	return ev
}

func (v customView) get(ctx context.Context, ns, name string) (runtime.Object, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	obj, err := v.ck.res.get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return v.out(obj)
}

func (v customView) list(ctx context.Context, ns string, opts metav1.ListOptions) ([]runtime.Object, metav1.ListMeta, error) {
	if err := v.check(); err != nil {
		return nil, metav1.ListMeta{}, err
	}
	items, meta, err := v.client(ns).ListPage(ctx, opts)
	if err != nil {
		return nil, meta, err
	}
	out := make([]runtime.Object, len(items))
	for i, it := range items {
		if out[i], err = v.out(it); err != nil {
			return nil, meta, err
		}
	}
	return out, meta, nil
}

func (v customView) watchList(ctx context.Context, ns string, opts metav1.ListOptions) ([]watch.Event, watch.Interface, error) {
	if err := v.check(); err != nil {
		return nil, nil, err
	}
	initial, w, err := v.client(ns).watchList(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	for i := range initial {
		initial[i] = v.watchEvent(initial[i])
	}
	return initial, w, nil
}

func (v customView) create(ctx context.Context, ns string, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	if errs := metav1validation.ValidateCreateOptions(&opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)
	}
	r := v.ck.res
	u, err := r.typed(obj)
	if err != nil {
		return nil, err
	}
	cl := r.Namespace(ns)
	c := r.c
	after, err := c.admit(ctx, gate.VerbCreate, r.kind.groupResource(), cl.namespaceOf(u), u.GetName())
	if err != nil {
		return nil, err
	}
	guard := func() error {
		switch {
		case v.ck.terminating:
			return apierrors.NewForbidden(r.kind.groupResource(), u.GetName(), errors.New("create not allowed while custom resource definition is terminating"))
		case v.ck.removed:
			return apierrors.NewNotFound(r.kind.groupResource(), u.GetName())
		}
		return nil
	}
	var out *unstructured.Unstructured
	if c.admitting() {
		out, err = v.client(ns).createAdmitted(ctx, u, opts, guard)
	} else {
		c.mu.Lock()
		if err = guard(); err == nil {
			out, err = r.createLocked(u, ns, managerOf(opts.FieldManager))
		}
		c.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	if after != nil {
		return nil, after
	}
	return v.out(out)
}

func (v customView) update(ctx context.Context, ns string, obj runtime.Object, sub string, opts metav1.UpdateOptions) (runtime.Object, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	out, err := v.ck.res.update(ctx, ns, obj, sub, opts)
	if err != nil {
		return nil, err
	}
	return v.out(out)
}

func (v customView) patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, sub string, opts metav1.PatchOptions) (runtime.Object, bool, error) {
	if err := v.check(); err != nil {
		return nil, false, err
	}
	view := func(old *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return v.ck.spec.Load().fromStorage(old, v.version.Name)
	}
	out, created, err := v.ck.res.Namespace(ns).patch(ctx, name, pt, data, opts, sub, v.version.Name, view)
	if err != nil {
		return nil, false, err
	}
	o, err := v.out(out)
	return o, created, err
}

func (v customView) remove(ctx context.Context, ns, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := v.check(); err != nil {
		return nil, false, err
	}
	obj, gone, err := v.client(ns).delete(ctx, name, opts)
	if err != nil {
		return nil, false, err
	}
	out, err := v.out(obj)
	return out, gone, err
}

func (v customView) peek(ns, name string) (runtime.Object, bool) {
	obj, ok := v.ck.res.peek(ns, name)
	if !ok {
		return nil, false
	}
	out, err := v.out(obj)
	if err != nil {
		return nil, false
	}
	return out, true
}
