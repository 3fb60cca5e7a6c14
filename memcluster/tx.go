package memcluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// A Tx is what a [Kind.Stored] hook may do to the cluster: read and write
// it as part of the request whose write called the hook (the cluster's
// lock is held). It is valid only until the hook returns.
type Tx struct {
	c *Cluster
}

// cluster returns the cluster of a live Tx.
func (tx *Tx) cluster() *Cluster {
	if tx == nil || tx.c == nil {
		panic("memcluster: a Tx used after its Kind.Stored hook returned")
	}
	return tx.c
}

// hookRunner runs the Stored hooks of writes in the order of the writes,
// one at a time: a hook's own writes queue their hooks behind it.
type hookRunner struct {
	queue   []func(*Tx)
	running bool
}

// runHookLocked runs hook, or queues it if a hook is running. The
// cluster's lock is held.
func (c *Cluster) runHookLocked(hook func(*Tx)) {
	h := &c.hooks
	h.queue = append(h.queue, hook)
	if h.running {
		return
	}
	h.running = true
	defer func() { h.running = false }()
	for len(h.queue) > 0 {
		next := h.queue[0]
		h.queue[0] = nil
		h.queue = h.queue[1:]
		tx := &Tx{c: c}
		next(tx)
		tx.c = nil
	}
	h.queue = nil
}

// Tx returns a client of r for a [Kind.Stored] hook, which writes through
// tx: without admission, as part of the request that called the hook.
func (r *Resource[T]) Tx(tx *Tx) TxClient[T] {
	if tx.cluster() != r.c {
		panic("memcluster: a Tx of another cluster")
	}
	return TxClient[T]{r: r, tx: tx}
}

// TxClient reads and writes one kind from a [Kind.Stored] hook. Objects
// are deep copies, as a [Client]'s are.
type TxClient[T Object] struct {
	r  *Resource[T]
	tx *Tx
}

// Get returns the object called name in namespace, and whether there is
// one.
func (t TxClient[T]) Get(namespace, name string) (T, bool) {
	t.tx.cluster()
	obj, ok := t.r.objs[t.r.Namespace(namespace).key(namespace, name)]
	if !ok {
		var zero T
		return zero, false
	}
	return deepCopy(obj), true
}

// List returns every object of namespace ("" is every namespace), sorted
// by namespace and name.
func (t TxClient[T]) List(namespace string) []T {
	t.tx.cluster()
	var out []T
	for _, key := range t.r.keysLocked() {
		if obj := t.r.objs[key]; namespace == "" || obj.GetNamespace() == namespace {
			out = append(out, deepCopy(obj))
		}
	}
	return out
}

// Update writes obj as [Client.Update] does, recorded in managedFields as
// kube-apiserver's own write ("kube-apiserver").
func (t TxClient[T]) Update(obj T) (T, error) {
	t.tx.cluster()
	in, err := t.r.roundTrip(obj)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.r.updateLocked(in, author{manager: apiserverManager})
}

// UpdateStatus writes the status of obj as [Client.UpdateStatus] does.
func (t TxClient[T]) UpdateStatus(obj T) (T, error) {
	t.tx.cluster()
	in, err := t.r.roundTrip(obj)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.r.updateStatusLocked(in, author{manager: apiserverManager})
}

// keysLocked returns the keys of every object, sorted.
func (r *Resource[T]) keysLocked() []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(r.objs))
	for k := range r.objs {
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys
}

func sortKeys(keys []types.NamespacedName) { slices.SortFunc(keys, cmpKey) }
