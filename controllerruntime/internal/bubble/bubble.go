// Package bubble reads the goroutines of a testing/synctest bubble from
// the Go runtime's stack dump: which bubble the caller is in, and where
// each goroutine of a bubble waits. The runtime marks each goroutine of a
// bubble in its stack trace ("[chan receive (durable), synctest bubble
// 3]"), and a goroutine durably blocked (on a channel, timer or lock of
// its bubble) with "(durable)": what is not durable, a goroutine waiting
// on a socket ("IO wait") for one, keeps the bubble's clock from moving.
package bubble

import (
	"bytes"
	"fmt"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// Goroutine is one goroutine of a stack dump.
type Goroutine struct {
	ID      int
	Wait    string // why it waits ("chan receive", "select", "IO wait", "sleep"), or "running"
	Durable bool   // durably blocked, as testing/synctest counts it
	Bubble  uint64 // its synctest bubble, 0 if none
	Frames  []Frame
	Creator string // the function that started it
}

// Frame is one call of a goroutine's stack.
type Frame struct {
	Func string // package-qualified function
	File string // base name of the file
	Line int
}

func (f Frame) String() string { return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line) }

// Of returns the goroutines of bubble id (every goroutine if id is 0).
func Of(id uint64) []Goroutine {
	var out []Goroutine
	for _, g := range Parse(dump()) {
		if id == 0 || g.Bubble == id {
			out = append(out, g)
		}
	}
	return out
}

// dump is the stack dump of every goroutine.
func dump() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Parse parses a stack dump (runtime.Stack's, or a panic's) into its
// goroutines; what is not a goroutine is skipped.
func Parse(dump string) []Goroutine {
	var out []Goroutine
	for block := range bytes.SplitSeq([]byte(dump), []byte("\n\n")) {
		if g, ok := ParseOne(string(block)); ok {
			out = append(out, g)
		}
	}
	return out
}

// ParseOne parses one goroutine of a stack dump (a block of it between
// empty lines):
//
//	goroutine 7 [chan receive (durable), 3 minutes, synctest bubble 1]:
//	pkg.fn(...)
//		/path/file.go:12 +0x1d
//	created by pkg.start in goroutine 1
//		/path/start.go:3 +0x2a
func ParseOne(s string) (Goroutine, bool) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	head, ok := strings.CutPrefix(lines[0], "goroutine ")
	if !ok {
		return Goroutine{}, false
	}
	idText, state, ok := strings.Cut(head, " [")
	state, ok2 := strings.CutSuffix(state, "]:")
	idText, _, _ = strings.Cut(idText, " ") // "9 gp=0x… m=nil" with GOTRACEBACK=system
	id, err := strconv.Atoi(idText)
	if !ok || !ok2 || err != nil {
		return Goroutine{}, false
	}
	g := Goroutine{ID: id}
	for i, part := range strings.Split(state, ", ") {
		switch {
		case i == 0:
			g.Wait, g.Durable = strings.CutSuffix(part, " (durable)")
		case strings.HasPrefix(part, "synctest bubble "):
			g.Bubble, _ = strconv.ParseUint(strings.TrimPrefix(part, "synctest bubble "), 10, 64)
		}
	}
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if c, ok := strings.CutPrefix(fn, "created by "); ok {
			c, _, _ = strings.Cut(c, " in goroutine ")
			g.Creator = c
			break
		}
		if j := strings.LastIndex(fn, "("); j > 0 {
			fn = fn[:j]
		}
		loc := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(loc, " +0x"); j > 0 {
			loc = loc[:j]
		}
		if j := strings.Index(loc, " fp="); j > 0 { // GOTRACEBACK=system and above
			loc = loc[:j]
		}
		file, lineText, _ := strings.Cut(loc, ":")
		n, _ := strconv.Atoi(lineText)
		g.Frames = append(g.Frames, Frame{Func: fn, File: path.Base(file), Line: n})
	}
	return g, true
}

// Current is the synctest bubble of the calling goroutine, or 0 outside
// any.
func Current() uint64 { return self().Bubble }

// Self is the id of the calling goroutine.
func Self() int { return self().ID }

func self() Goroutine {
	buf := make([]byte, 512)
	buf = buf[:runtime.Stack(buf, false)]
	g, _ := ParseOne(string(buf))
	return g
}

// Calls reports whether g's stack has a call of a function whose name
// has one of the prefixes.
func (g Goroutine) Calls(prefixes ...string) bool {
	for _, f := range g.Frames {
		for _, p := range prefixes {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
	}
	return false
}

// Where says where g waits: its wait reason and its innermost frames up to
// the first that is not Go's or a library's ([Library]), and who started
// it: "[select] k8s.io/client-go/tools/cache.(*Reflector).watch
// (reflector.go:512) ← example.com/op.run (op.go:20), started by
// example.com/op.Start".
func (g Goroutine) Where() string {
	var fs []string
	for _, f := range g.Frames {
		if strings.HasPrefix(f.Func, "runtime.") && len(fs) == 0 {
			continue
		}
		fs = append(fs, f.String())
		if !Library(f.Func) || len(fs) == 4 {
			break
		}
	}
	wait := g.Wait
	if wait == "" {
		wait = "?"
	}
	text := fmt.Sprintf("[%s] %s", wait, strings.Join(fs, " ← "))
	if g.Creator != "" {
		text += ", started by " + g.Creator
	}
	return text
}

// Library reports whether fn belongs to Go, Kubernetes' libraries, Ginkgo
// and Gomega, or ctrlkit, rather than to the code under test.
func Library(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "time.", "context.", "internal/", "testing.", "net/", "net.", "io.", "os.",
		"k8s.io/", "sigs.k8s.io/", "golang.org/", "github.com/go-logr/", "github.com/onsi/", "github.com/ctrlkit/ctrlkit/"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}
