package workqueue

// ring is a FIFO on a circular buffer whose length is a power of two. It
// grows by doubling and shrinks when mostly empty, so a queue that has
// drained after a burst does not keep the burst's memory.
type ring[E any] struct {
	buf  []E
	head int
	n    int
}

func (r *ring[E]) len() int { return r.n }

func (r *ring[E]) push(e E) {
	if r.n == len(r.buf) {
		r.resize(max(16, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

// pop removes and returns the oldest element. The ring must not be empty.
func (r *ring[E]) pop() E {
	var zero E
	e := r.buf[r.head]
	r.buf[r.head] = zero // let the element be collected
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if len(r.buf) > 1024 && r.n < len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return e
}

// at returns the i-th oldest element; i < len.
func (r *ring[E]) at(i int) E { return r.buf[(r.head+i)&(len(r.buf)-1)] }

// peek returns the oldest element. The ring must not be empty.
func (r *ring[E]) peek() E { return r.buf[r.head] }

func (r *ring[E]) resize(size int) {
	buf := make([]E, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
