// Package informer keeps an indexed, in-memory copy of Kubernetes objects
// in step with any list/watch source, and tells handlers what changed.
//
// It has two layers, usable separately:
//
//   - [Cache] is a thread-safe store of objects of one type T (a pointer API
//     type such as *corev1.Pod), keyed by [types.NamespacedName], with
//     built-in indexes by namespace ([IndexNamespace]) and by controller
//     owner UID ([IndexControllerUID]) plus any [IndexFunc] you add. It does
//     no I/O: tests and in-memory clusters fill it directly with
//     [Cache.Add], [Cache.Delete] and [Cache.Replace].
//   - [Informer] runs a [ListWatcher] in [Informer.Run]: it lists, replaces
//     the cache's content, then watches, and queues every change for each
//     registered [Handler].
//
// # Guarantees
//
//   - Shared, read-only objects. Get, List and ByIndex return the stored
//     pointers themselves, not copies. Never modify them; DeepCopy first.
//     Without a [Config.Transform], the informer asks a watch that can
//     (such as memcluster's) for its source's own
//     objects rather than copies, so that they may be shared with the
//     source too.
//   - Typed lookups with no key strings: Get(types.NamespacedName),
//     List(namespace, selector), ByIndex(index, value). AppendList and
//     AppendByIndex write into a slice the caller supplies and allocate
//     nothing when it has room.
//   - Bad input is an error, never a panic: a nil object, an object with no
//     name, or an index function error fails the write and leaves the
//     cache as it was.
//   - Notification after the cache update. A handler's Get sees the state it
//     was told about, or a later one.
//   - Per handler, calls are sequential and in cache order. Each handler has
//     its own goroutine and an unbounded queue ([Registration.Pending]
//     shows its length), so a slow handler delays only itself: the cache
//     and other handlers keep up. The price is memory: a handler that never
//     catches up makes its queue grow without limit.
//   - Level triggered. Handlers see a subsequence of each object's states;
//     a delete and re-create may surface as one update (compare UIDs).
//   - Relists are diffs. After a watch expires (410), the new list is
//     compared with the cache: new objects are adds, objects with a new
//     resource version are updates, and objects that are gone are deletes
//     with [Deleted.FinalStateUnknown] set (tombstones), since the real
//     delete event was missed.
//   - Two kinds of synced. [Informer.HasSynced] means the first list is in
//     the cache. [Registration.HasSynced] means that handler has returned
//     from every call for it. A handler added late first gets the cache's
//     contents as adds.
//   - Resync is local: [Config.ResyncPeriod] replays the cache to handlers as
//     updates with oldObj == newObj, and never reads the source.
//   - Time comes from [Config.Clock]; tests drive resync and retry backoff
//     with [clock.Fake] and never sleep. On a Fake the informer's work is
//     tracked ([clock.Source]): from New until its first list reaches the
//     handlers, each push of notifications until the handler has returned
//     from it, and each event of a watch that acknowledges events (as
//     memcluster's do) until it is applied and handed on. Once the clock
//     has settled, every handler has seen every change.
//   - Reads are as stale as the last event. A controller that just wrote an
//     object will not see the write until its watch event arrives.
//
// # Where the I/O is
//
// Only [Informer.Run] does I/O, through the [ListWatcher] you supply, and
// only Run starts goroutines: one per handler (resync runs on a timer of the
// clock). They all exit before Run returns.
//
// # Usage
//
//	lw := informer.ListWatchFuncs[*corev1.Pod]{
//		ListFunc: func(ctx context.Context) ([]*corev1.Pod, string, error) {
//			l, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
//			if err != nil {
//				return nil, "", err
//			}
//			pods := make([]*corev1.Pod, len(l.Items))
//			for i := range l.Items {
//				pods[i] = &l.Items[i]
//			}
//			return pods, l.ResourceVersion, nil
//		},
//		WatchFunc: func(ctx context.Context, rv string) (watch.Interface, error) {
//			return client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
//				ResourceVersion: rv, AllowWatchBookmarks: true})
//		},
//	}
//	pods := informer.New[*corev1.Pod](lw, informer.Config[*corev1.Pod]{
//		Transform: dropManagedFields, // optional: store less
//	})
//	reg, err := pods.AddHandler(informer.Handler[*corev1.Pod]{
//		OnAdd: func(p *corev1.Pod) { queue.Add(ownerKey(p)) },
//	})
//	if err != nil {
//		return err
//	}
//	go func() { errc <- pods.Run(ctx) }() // returns nil once ctx is done
//	<-reg.Synced()                        // the handler has seen the first list
//	owned, err := pods.Cache().ByIndex(informer.IndexControllerUID, string(rs.UID))
//
// A Cache[*appsv1.ReplicaSet] satisfies a consumer's one-method interface
// such as Get(types.NamespacedName) (*appsv1.ReplicaSet, error) directly.
// The controllers read through package reconcile's interfaces, whose
// GetterFunc adapts any other source.
package informer
