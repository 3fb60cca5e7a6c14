package clustertest

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/ctrlkit/ctrlkit/controllerruntime/internal/bubble"
)

// The bench reads the stacks of its bubble's goroutines to say which
// worker is blocked, and which goroutines did not end when the bench
// stopped. The Go runtime marks each goroutine of a synctest bubble in
// its stack trace ("[chan receive (durable), synctest bubble 3]"); the
// bench learns its own bubble's number from its first goroutine
// (bubble.Current). Package bubble parses the stacks; the bench keeps
// the buffer they are read into, and skips other bubbles' goroutines
// unparsed.

// goroutines returns the goroutines of synctest bubble id (every
// goroutine if id is 0), from runtime.Stack, with a buffer of sh's if
// it is not nil.
func goroutines(id uint64, sh *shared) []bubble.Goroutine {
	var buf []byte
	if sh != nil {
		b, release := sh.stackBuffer()
		defer release()
		buf = *b
		defer func() { *b = buf[:cap(buf)] }() // keep it if it grew
	} else {
		buf = make([]byte, 1<<20)
	}
	var n int
	for {
		n = runtime.Stack(buf, true)
		if n < len(buf) {
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	mark := []byte(fmt.Sprintf(", synctest bubble %d", id))
	var out []bubble.Goroutine
	for block := range bytes.SplitSeq(buf[:n], []byte("\n\n")) {
		if id != 0 {
			// Another bubble's (another bench's, running beside): not
			// worth parsing.
			head, _, _ := bytes.Cut(block, []byte("\n"))
			if i := bytes.Index(head, mark); i < 0 || i+len(mark) < len(head) && head[i+len(mark)] >= '0' && head[i+len(mark)] <= '9' {
				continue
			}
		}
		g, ok := bubble.ParseOne(string(block))
		if ok && (id == 0 || g.Bubble == id) {
			out = append(out, g)
		}
	}
	return out
}

// library reports whether fn belongs to Go, Kubernetes' libraries or the
// bench, rather than to the code under test.
func library(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "time.", "context.", "internal/", "testing.", "net/", "io.",
		"k8s.io/", "sigs.k8s.io/", "golang.org/", "github.com/go-logr/", "github.com/onsi/",
		"github.com/ctrlkit/ctrlkit/controllerruntime/clustertest.", "github.com/ctrlkit/ctrlkit/memcluster.",
		"github.com/ctrlkit/ctrlkit/informer.", "github.com/ctrlkit/ctrlkit/workqueue.", "github.com/ctrlkit/ctrlkit/clock."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// blockedWorkers describes the goroutines of bubble that are inside a
// controller-runtime Reconcile: at a quiescent instant each is blocked on
// something other than the cluster.
func blockedWorkers(id uint64, sh *shared) []string {
	var out []string
	for _, g := range goroutines(id, sh) {
		handler := slices.IndexFunc(g.Frames, func(f bubble.Frame) bool {
			return strings.HasPrefix(f.Func, "sigs.k8s.io/controller-runtime/pkg/internal/controller.") &&
				strings.HasSuffix(f.Func, ".reconcileHandler")
		})
		if handler < 0 {
			continue
		}
		inner := g.Frames[:handler]
		reconcile := slices.IndexFunc(inner, func(f bubble.Frame) bool { return strings.HasSuffix(f.Func, ".Reconcile") && !library(f.Func) })
		user := slices.IndexFunc(inner, func(f bubble.Frame) bool { return !library(f.Func) })
		if user < 0 {
			continue // inside controller-runtime itself
		}
		line := fmt.Sprintf("worker blocked (%s) in %s", g.Wait, inner[user])
		if reconcile > user {
			line += ", called by " + inner[reconcile].Func
		}
		if c := slices.IndexFunc(inner[:user], func(f bubble.Frame) bool {
			return strings.HasPrefix(f.Func, "sigs.k8s.io/controller-runtime/pkg/cache")
		}); c >= 0 {
			line += ": reading from the manager's cache (see the kinds above)"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// leftovers describes the goroutines of bubble other than the caller's,
// grouped by where they wait.
func leftovers(id uint64, self int, sh *shared) []string {
	count := map[string]int{}
	for _, g := range goroutines(id, sh) {
		if g.ID == self || isTestRunner(g) || isScheduler(g) {
			continue
		}
		count[describeWait(g)]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%d× %s", count[k], k))
	}
	return out
}

// isTestRunner reports whether g is one of testing/synctest's own
// goroutines of the bubble: the caller of synctest.Test, or the one
// waiting for the test function to end.
func isTestRunner(g bubble.Goroutine) bool {
	return slices.ContainsFunc(g.Frames, func(f bubble.Frame) bool {
		return strings.HasSuffix(f.Func, ".testingSynctestTest") || f.Func == "internal/synctest.Run"
	})
}

// isScheduler reports whether g is the bench's own scheduler.
func isScheduler(g bubble.Goroutine) bool {
	return slices.ContainsFunc(g.Frames, func(f bubble.Frame) bool {
		return f.Func == "github.com/ctrlkit/ctrlkit/controllerruntime/clustertest.(*scheduler).run"
	})
}

// describeWait says where g waits: its wait reason and its innermost
// frames, library frames before the first of the code under test.
func describeWait(g bubble.Goroutine) string {
	var fs []string
	for _, f := range g.Frames {
		if strings.HasPrefix(f.Func, "runtime.") && len(fs) == 0 {
			continue
		}
		fs = append(fs, f.String())
		if !library(f.Func) || len(fs) == 4 {
			break
		}
	}
	text := fmt.Sprintf("[%s] %s", cmp.Or(g.Wait, "?"), strings.Join(fs, " ← "))
	if g.Creator != "" {
		text += ", started by " + g.Creator
	}
	return text
}
