package clustertest

import (
	"math/rand"
	"os"
	"reflect"
	"runtime"
	"strings"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Process-wide state of the libraries a bench runs, that would otherwise
// stall a bench, break its replay or outlive it. It is set once, when the
// package is initialised, before any goroutine of a test can read it
// (setting it from a running test would race with code already reading it).
//
//   - apimachinery's utilruntime.ErrorHandlers rate-limit HandleError to
//     one call per millisecond, process-wide: the limiter remembers the
//     time of the last error and sleeps the difference. Its first time is
//     read from the wall clock when the process starts; inside a synctest
//     bubble the clock reads 2000-01-01, so the first error (any failed
//     list or watch of an informer, any error of a client-go worker)
//     sleeps about 26 virtual years, and the bench ends in a deadlock.
//     Within a bubble it would also make two errors of one instant come
//     out in the order the goroutines happened to run. The bench removes
//     that limiter (logging stays): a test binary does not need it.
//   - math/rand's global source (client-go's and apimachinery's jitter:
//     a reflector's backoff after a failed list or watch, an event
//     broadcaster's retry, controller-runtime's resync periods) is seeded
//     randomly and, since Go 1.24, math/rand.Seed does nothing unless
//     GODEBUG has randseednop=0. The bench turns that setting on here, and
//     [Test] seeds the global source with [Options.Seed], so that a bench
//     that draws jitter replays.
func init() {
	utilruntime.ErrorHandlers = withoutErrorBackoff(utilruntime.ErrorHandlers)
	allowGlobalSeed()
}

// withoutErrorBackoff returns hs without apimachinery's rate limiter
// (the handler made by its backoffError).
func withoutErrorBackoff(hs []utilruntime.ErrorHandler) []utilruntime.ErrorHandler {
	var kept []utilruntime.ErrorHandler
	for _, h := range hs {
		if isErrorBackoff(h) {
			continue
		}
		kept = append(kept, h)
	}
	return kept
}

func isErrorBackoff(h utilruntime.ErrorHandler) bool {
	f := runtime.FuncForPC(reflect.ValueOf(h).Pointer())
	return f != nil && strings.HasPrefix(f.Name(), "k8s.io/apimachinery/pkg/util/runtime.backoffError")
}

// allowGlobalSeed makes math/rand.Seed seed the global source again
// (GODEBUG randseednop=0), unless GODEBUG already says otherwise.
func allowGlobalSeed() {
	debug := os.Getenv("GODEBUG")
	if strings.Contains(debug, "randseednop=") {
		return
	}
	if debug != "" {
		debug += ","
	}
	_ = os.Setenv("GODEBUG", debug+"randseednop=0") // cannot fail for a valid name
}

// seedGlobal seeds math/rand's global source. Without randseednop=0 (see
// allowGlobalSeed) it does nothing.
func seedGlobal(seed uint64) {
	rand.Seed(int64(seed)) // deprecated, but the global source is what client-go draws from
}
