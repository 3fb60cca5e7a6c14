package clustertest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/internal/gate"
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
// A worker's pick waits for its turn at the bench's gate, as a request
// does. A pick is a choice of the schedule, "12:pick1@site#7" (at step 12,
// the 7th key the queue of controller site handed out was the second
// ready in the canonical order). A controller whose name contains one
// of ",:@#=" keeps its canonical order.
func NewQueue[T comparable](c *Cluster) func(controllerName string, rateLimiter workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return func(name string, rl workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
		q := &pickQueue[T]{s: c.sched, name: name, dirty: map[T]bool{}, processing: map[T]bool{}}
		q.cond = sync.NewCond(&q.mu)
		dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Queue: q})
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{DelayingQueue: dq})
	}
}

// pickQueue is a workqueue (client-go's workqueue.TypedInterface, with
// its rules: a key added while a worker has it waits for Done, a key is
// in the queue once) whose Get lets the scheduler choose the key. A
// worker's pick is a step of the bench: Get waits at the gate, so that
// the pick is made once every goroutine of the bench is blocked (every
// key that an event or a timer of the instant adds is in), and the keys
// ready do not depend on how goroutines happened to run.
type pickQueue[T comparable] struct {
	s    *scheduler
	name string

	mu           sync.Mutex
	cond         *sync.Cond
	items        []T // ready, in the order added
	dirty        map[T]bool
	processing   map[T]bool
	shuttingDown bool
	drain        bool
}

var _ workqueue.TypedInterface[string] = (*pickQueue[string])(nil)

func (q *pickQueue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown || q.dirty[item] {
		return
	}
	q.dirty[item] = true
	if q.processing[item] {
		return
	}
	q.items = append(q.items, item)
	q.cond.Signal()
}

func (q *pickQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *pickQueue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.items) == 0 && !q.shuttingDown {
			q.cond.Wait()
		}
		if len(q.items) == 0 {
			return item, true
		}
		if q.shuttingDown {
			break
		}
		// The pick is a step: wait for the bench's turn.
		q.mu.Unlock()
		err := q.s.Enter(context.Background(), gate.Step{Kind: gate.StepRequest, Verb: pickVerb, Resource: "workqueue", Name: q.name})
		q.mu.Lock()
		if err != nil || len(q.items) > 0 {
			break // another worker may have taken what was ready: wait again
		}
	}
	if len(q.items) == 0 {
		return item, true
	}
	i := q.s.pickKey(q.name, len(q.items), func(i int) string { return fmt.Sprint(q.items[i]) })
	item = q.items[i]
	q.items = slices.Delete(q.items, i, i+1)
	q.processing[item] = true
	delete(q.dirty, item)
	return item, false
}

func (q *pickQueue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, item)
	if q.dirty[item] {
		q.items = append(q.items, item)
		q.cond.Signal()
	} else if len(q.processing) == 0 {
		q.cond.Broadcast() // a ShutDownWithDrain may wait
	}
}

func (q *pickQueue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain, q.shuttingDown = false, true
	q.cond.Broadcast()
}

func (q *pickQueue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain, q.shuttingDown = true, true
	q.cond.Broadcast()
	for q.drain && len(q.processing) > 0 {
		q.cond.Wait()
	}
}

func (q *pickQueue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// pickVerb is the verb of a workqueue's pick at the gate.
const pickVerb gate.Verb = "pick"

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
	ch := Choice{Step: s.steps, Index: i, Queue: name, Pop: p.n} // the pick's own step
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
