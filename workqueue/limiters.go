package workqueue

import (
	"math"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/clock"
)

// Defaults of the limiters, the values client-go's controllers use.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 1000 * time.Second
	DefaultQPS       = 10
	DefaultBurst     = 100
)

var (
	_ RateLimiter[string] = (*ExponentialBackoff[string])(nil)
	_ RateLimiter[string] = (*TokenBucket[string])(nil)
	_ RateLimiter[string] = (*MaxOf[string])(nil)
	_ RateLimiter[string] = (*FastSlow[string])(nil)
)

// DefaultControllerRateLimiter returns the limiter of client-go's
// controllers: the larger of a per-item exponential backoff from 5ms to
// 1000s and an overall token bucket of 10 per second with a burst of 100,
// on the real clock. A [Queue] with no limiter configured gets the same,
// on the queue's clock.
func DefaultControllerRateLimiter[T comparable]() RateLimiter[T] {
	return defaultLimiter[T](nil)
}

func defaultLimiter[T comparable](c clock.Clock) RateLimiter[T] {
	return NewMaxOf(
		NewExponentialBackoff[T](DefaultBaseDelay, DefaultMaxDelay),
		NewTokenBucket[T](DefaultQPS, DefaultBurst, c),
	)
}

// ExponentialBackoff delays an item base·2ⁿ after its n-th failure in a row
// (counting from 0), capped at max. Its zero value uses [DefaultBaseDelay]
// and [DefaultMaxDelay].
type ExponentialBackoff[T comparable] struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[T]int
}

// NewExponentialBackoff returns a backoff from base up to max. A base or
// max ≤ 0 means its default; a max below base caps every delay at max.
func NewExponentialBackoff[T comparable](base, max time.Duration) *ExponentialBackoff[T] {
	return &ExponentialBackoff[T]{base: base, max: max}
}

// When records a failure of item and returns base·2ⁿ, capped at max, where
// n is the number of failures recorded before this one. It never
// overflows, however many failures there are.
func (r *ExponentialBackoff[T]) When(item T) time.Duration {
	base, limit := r.base, r.max
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if limit <= 0 {
		limit = DefaultMaxDelay
	}
	r.mu.Lock()
	if r.failures == nil {
		r.failures = make(map[T]int)
	}
	n := r.failures[item]
	if n < math.MaxInt {
		r.failures[item] = n + 1
	}
	r.mu.Unlock()
	if n >= 63 || base > limit>>n {
		return limit
	}
	return base << n
}

// Forget clears the failures of item.
func (r *ExponentialBackoff[T]) Forget(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, item)
}

// NumRequeues returns the number of failures of item.
func (r *ExponentialBackoff[T]) NumRequeues(item T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[item]
}

// TokenBucket limits retries of all items together to a rate, allowing
// bursts. Each When takes a token; when none is left it returns how long
// until the token it reserved is due, so callers queue up behind each
// other. The bucket starts full. Its zero value uses [DefaultQPS],
// [DefaultBurst] and the real clock.
//
// It is a generic cell rate algorithm on the injected clock: exact integer
// arithmetic, with the interval between tokens rounded to a nanosecond.
// It keeps no per-item state.
type TokenBucket[T comparable] struct {
	qps   float64
	burst int
	clock clock.Clock

	mu  sync.Mutex
	tat time.Time // theoretical arrival time: when the bucket is next full
}

// NewTokenBucket returns a bucket refilled at qps tokens a second that
// holds up to burst tokens, measuring time with c. A qps or burst ≤ 0
// means its default; a nil c means the real clock.
func NewTokenBucket[T comparable](qps float64, burst int, c clock.Clock) *TokenBucket[T] {
	return &TokenBucket[T]{qps: qps, burst: burst, clock: c}
}

// When takes a token and returns how long until it is available.
func (r *TokenBucket[T]) When(T) time.Duration {
	qps, burst := r.qps, r.burst
	if !(qps > 0) { // also catches NaN
		qps = DefaultQPS
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	interval := saturatingDuration(math.Round(float64(time.Second) / qps))
	now := clock.OrReal(r.clock).Now()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tat.Before(now) {
		r.tat = now
	}
	r.tat = r.tat.Add(interval)
	// The token is available once the bucket, full at tat, has room for
	// burst tokens: at tat - burst·interval.
	wait := r.tat.Sub(now)
	if interval > 0 && int64(burst) > math.MaxInt64/int64(interval) {
		return 0
	}
	return max(0, wait-time.Duration(burst)*interval)
}

// saturatingDuration converts nanoseconds to a Duration, saturating
// instead of overflowing.
func saturatingDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 { // float64(MaxInt64) rounds up to 2⁶³
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Forget does nothing: the bucket is shared by all items.
func (r *TokenBucket[T]) Forget(T) {}

// NumRequeues returns 0: the bucket does not count per item.
func (r *TokenBucket[T]) NumRequeues(T) int { return 0 }

// MaxOf combines limiters: an item waits as long as the strictest of them
// says. Every limiter records every failure.
type MaxOf[T comparable] struct {
	limiters []RateLimiter[T]
}

// NewMaxOf returns the combination of limiters. Nil limiters are skipped;
// with none left, When always returns 0.
func NewMaxOf[T comparable](limiters ...RateLimiter[T]) *MaxOf[T] {
	r := &MaxOf[T]{}
	for _, l := range limiters {
		if l != nil {
			r.limiters = append(r.limiters, l)
		}
	}
	return r
}

// When records the failure with every limiter and returns the longest
// delay.
func (r *MaxOf[T]) When(item T) time.Duration {
	var d time.Duration
	for _, l := range r.limiters {
		d = max(d, l.When(item))
	}
	return d
}

// Forget forgets item in every limiter.
func (r *MaxOf[T]) Forget(item T) {
	for _, l := range r.limiters {
		l.Forget(item)
	}
}

// NumRequeues returns the largest count of the limiters.
func (r *MaxOf[T]) NumRequeues(item T) int {
	n := 0
	for _, l := range r.limiters {
		n = max(n, l.NumRequeues(item))
	}
	return n
}

// FastSlow retries an item quickly a few times, then slowly: the first
// maxFast failures in a row wait fast, later ones wait slow. Its zero value
// retries at once.
type FastSlow[T comparable] struct {
	fast, slow time.Duration
	maxFast    int

	mu       sync.Mutex
	failures map[T]int
}

// NewFastSlow returns a limiter that waits fast for the first maxFast
// failures of an item and slow after that.
func NewFastSlow[T comparable](fast, slow time.Duration, maxFast int) *FastSlow[T] {
	return &FastSlow[T]{fast: fast, slow: slow, maxFast: maxFast}
}

// When records a failure of item and returns fast or slow.
func (r *FastSlow[T]) When(item T) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = make(map[T]int)
	}
	n := r.failures[item]
	if n < math.MaxInt {
		n++
		r.failures[item] = n
	}
	if n <= r.maxFast {
		return r.fast
	}
	return r.slow
}

// Forget clears the failures of item.
func (r *FastSlow[T]) Forget(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, item)
}

// NumRequeues returns the number of failures of item.
func (r *FastSlow[T]) NumRequeues(item T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[item]
}
