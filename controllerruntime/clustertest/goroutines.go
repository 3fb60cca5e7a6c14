package clustertest

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The bench reads the stacks of its bubble's goroutines to say which
// worker is blocked, and which goroutines did not end when the bench
// stopped. The Go runtime marks each goroutine of a synctest bubble in
// its stack trace ("[chan receive (durable), synctest bubble 3]"); the
// bench learns its own bubble's number from its first goroutine.

// goroutine is one goroutine of a stack dump.
type goroutine struct {
	id      int
	wait    string // why it waits ("chan receive", "select", "sleep"), or "running"
	bubble  uint64 // its synctest bubble, 0 if none
	frames  []frame
	creator string // the function that started it
}

type frame struct {
	fn   string // package-qualified function
	file string // base name of the file
	line int
}

func (f frame) String() string { return fmt.Sprintf("%s (%s:%d)", f.fn, f.file, f.line) }

// goroutines returns the goroutines of synctest bubble bubble (every
// goroutine if bubble is 0), from runtime.Stack, with a buffer of sh's if
// it is not nil.
func goroutines(bubble uint64, sh *shared) []goroutine {
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
	mark := []byte(fmt.Sprintf(", synctest bubble %d", bubble))
	var out []goroutine
	for block := range bytes.SplitSeq(buf[:n], []byte("\n\n")) {
		if bubble != 0 {
			// Another bubble's (another bench's, running beside): not
			// worth parsing.
			head, _, _ := bytes.Cut(block, []byte("\n"))
			if i := bytes.Index(head, mark); i < 0 || i+len(mark) < len(head) && head[i+len(mark)] >= '0' && head[i+len(mark)] <= '9' {
				continue
			}
		}
		g, ok := parseGoroutine(string(block))
		if ok && (bubble == 0 || g.bubble == bubble) {
			out = append(out, g)
		}
	}
	return out
}

// parseGoroutine parses one goroutine of a stack dump:
//
//	goroutine 7 [chan receive (durable), 3 minutes, synctest bubble 1]:
//	pkg.fn(...)
//		/path/file.go:12 +0x1d
func parseGoroutine(s string) (goroutine, bool) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	head, ok := strings.CutPrefix(lines[0], "goroutine ")
	if !ok {
		return goroutine{}, false
	}
	idText, state, ok := strings.Cut(head, " [")
	state, ok2 := strings.CutSuffix(state, "]:")
	id, err := strconv.Atoi(idText)
	if !ok || !ok2 || err != nil {
		return goroutine{}, false
	}
	g := goroutine{id: id}
	for i, part := range strings.Split(state, ", ") {
		switch {
		case i == 0:
			g.wait = strings.TrimSuffix(part, " (durable)")
		case strings.HasPrefix(part, "synctest bubble "):
			g.bubble, _ = strconv.ParseUint(strings.TrimPrefix(part, "synctest bubble "), 10, 64)
		}
	}
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if c, ok := strings.CutPrefix(fn, "created by "); ok {
			c, _, _ = strings.Cut(c, " in goroutine ")
			g.creator = c
			break
		}
		if j := strings.LastIndex(fn, "("); j > 0 {
			fn = fn[:j]
		}
		loc := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(loc, " +0x"); j > 0 {
			loc = loc[:j]
		}
		file, lineText, _ := strings.Cut(loc, ":")
		n, _ := strconv.Atoi(lineText)
		g.frames = append(g.frames, frame{fn: fn, file: path.Base(file), line: n})
	}
	return g, true
}

// currentBubble is the synctest bubble of the calling goroutine, or 0.
func currentBubble() uint64 {
	buf := make([]byte, 512)
	buf = buf[:runtime.Stack(buf, false)]
	g, ok := parseGoroutine(string(buf))
	if !ok {
		return 0
	}
	return g.bubble
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
func blockedWorkers(bubble uint64, sh *shared) []string {
	var out []string
	for _, g := range goroutines(bubble, sh) {
		handler := slices.IndexFunc(g.frames, func(f frame) bool {
			return strings.HasPrefix(f.fn, "sigs.k8s.io/controller-runtime/pkg/internal/controller.") &&
				strings.HasSuffix(f.fn, ".reconcileHandler")
		})
		if handler < 0 {
			continue
		}
		inner := g.frames[:handler]
		reconcile := slices.IndexFunc(inner, func(f frame) bool { return strings.HasSuffix(f.fn, ".Reconcile") && !library(f.fn) })
		user := slices.IndexFunc(inner, func(f frame) bool { return !library(f.fn) })
		if user < 0 {
			continue // inside controller-runtime itself
		}
		line := fmt.Sprintf("worker blocked (%s) in %s", g.wait, inner[user])
		if reconcile > user {
			line += ", called by " + inner[reconcile].fn
		}
		if c := slices.IndexFunc(inner[:user], func(f frame) bool { return strings.HasPrefix(f.fn, "sigs.k8s.io/controller-runtime/pkg/cache") }); c >= 0 {
			line += ": reading from the manager's cache (see the kinds above)"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// leftovers describes the goroutines of bubble other than the caller's,
// grouped by where they wait.
func leftovers(bubble uint64, self int, sh *shared) []string {
	count := map[string]int{}
	for _, g := range goroutines(bubble, sh) {
		if g.id == self || isTestRunner(g) || isScheduler(g) {
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
func isTestRunner(g goroutine) bool {
	return slices.ContainsFunc(g.frames, func(f frame) bool {
		return strings.HasSuffix(f.fn, ".testingSynctestTest") || f.fn == "internal/synctest.Run"
	})
}

// isScheduler reports whether g is the bench's own scheduler.
func isScheduler(g goroutine) bool {
	return slices.ContainsFunc(g.frames, func(f frame) bool {
		return f.fn == "github.com/ctrlkit/ctrlkit/controllerruntime/clustertest.(*scheduler).run"
	})
}

// describeWait says where g waits: its wait reason and its innermost
// frames, library frames before the first of the code under test.
func describeWait(g goroutine) string {
	var fs []string
	for _, f := range g.frames {
		if strings.HasPrefix(f.fn, "runtime.") && len(fs) == 0 {
			continue
		}
		fs = append(fs, f.String())
		if !library(f.fn) || len(fs) == 4 {
			break
		}
	}
	text := fmt.Sprintf("[%s] %s", cmp.Or(g.wait, "?"), strings.Join(fs, " ← "))
	if g.creator != "" {
		text += ", started by " + g.creator
	}
	return text
}

// goroutineID is the id of the calling goroutine.
func goroutineID() int {
	buf := make([]byte, 128)
	buf = buf[:runtime.Stack(buf, false)]
	g, _ := parseGoroutine(string(buf))
	return g.id
}
