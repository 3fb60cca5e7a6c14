package clustertest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"k8s.io/client-go/util/workqueue"
)

// NewQueue returns, for controller.Options.NewQueue, a controller's
// workqueue whose picks the bench explores: with [Options.Interleave]
// the seed chooses which of the keys ready in the queue a worker gets
// next (the canonical order is first in, first out), and so also the
// order in which the keys of timers that fire at one instant (a
// RequeueAfter, a rate limiter's backoff) are handed out. It is
// client-go's rate-limiting, delaying workqueue otherwise: a key is
// never handed to two workers at once, a key added again while a worker
// has it waits for Done. controller-runtime offers no default for all
// of a Manager's controllers, so pass it to each controller whose picks
// you want explored:
//
//	ctrl.NewControllerManagedBy(mgr).For(&v1.Site{}).
//		WithOptions(controller.Options{NewQueue: clustertest.NewQueue[reconcile.Request](c)}).
//		Complete(r)
//
// A pick is a choice of the schedule, "12:pick1@site#7" (before step 12,
// the 7th key the queue of controller site handed out was the second
// ready in the canonical order). A controller whose name contains one
// of ",:@#=" keeps its canonical order.
func NewQueue[T comparable](c *Cluster) func(controllerName string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return func(name string, rl workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
		store := &pickStore[T]{s: c.sched, name: name}
		q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Queue: store})
		dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Queue: q})
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{DelayingQueue: dq})
	}
}

// pickStore is the storage of a workqueue (client-go's workqueue.Queue):
// the keys ready, of which Pop takes the one the scheduler's chooser
// picks. The workqueue calls it with its lock held.
type pickStore[T comparable] struct {
	s     *scheduler
	name  string
	items []T
}

func (q *pickStore[T]) Touch(T)     {}
func (q *pickStore[T]) Push(item T) { q.items = append(q.items, item) }
func (q *pickStore[T]) Len() int    { return len(q.items) }
func (q *pickStore[T]) Pop() (item T) {
	i := q.s.pickKey(q.name, len(q.items), func(i int) string { return fmt.Sprint(q.items[i]) })
	item = q.items[i]
	var zero T
	copy(q.items[i:], q.items[i+1:])
	q.items[len(q.items)-1] = zero
	q.items = q.items[:len(q.items)-1]
	return item
}

// queuePicks is what the chooser keeps of a queue: how many keys it has
// handed out, and its own stream of choices (the order in which queues
// pop does not depend on the scheduler's steps alone).
type queuePicks struct {
	n   uint64
	rnd *rand.Rand
}

// pickKey returns the index of the key queue name hands out next, among
// n ready (0 is the first in); text describes the key of an index.
func (s *scheduler) pickKey(name string, n int, text func(int) string) int {
	s.mu.Lock()
	c := s.choose
	if c == nil || strings.ContainsAny(name, ",:@#=") {
		s.mu.Unlock()
		return 0
	}
	if c.picks == nil {
		c.picks = map[string]*queuePicks{}
	}
	p := c.picks[name]
	if p == nil {
		h := fnv.New64a()
		h.Write([]byte(name))
		p = &queuePicks{rnd: rand.New(rand.NewPCG(c.seed, h.Sum64()))}
		c.picks[name] = p
	}
	p.n++
	i := 0
	switch {
	case c.rnd != nil:
		if n > 1 && p.rnd.Float64() < c.rate {
			i = 1 + p.rnd.IntN(n-1)
		}
	default:
		i = c.fixedPicks[pickID(name, p.n)] % n
	}
	if i == 0 {
		s.mu.Unlock()
		return 0
	}
	ch := Choice{Step: s.steps + 1, Index: i, Queue: name, Pop: p.n}
	var passed []string
	for j := range min(i, 3) {
		passed = append(passed, text(j))
	}
	if i > 3 {
		passed = append(passed, fmt.Sprintf("%d more", i-3))
	}
	c.made = append(c.made, made{Choice: ch, chose: text(i), passed: strings.Join(passed, "; ")})
	note := s.note
	s.mu.Unlock()
	if note != nil {
		note(fmt.Sprintf("queue %s hands out %s before %s (explored)", name, text(i), strings.Join(passed, "; ")))
	}
	return i
}

func pickID(queue string, pop uint64) string { return fmt.Sprintf("%s#%d", queue, pop) }
