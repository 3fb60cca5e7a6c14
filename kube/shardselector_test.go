package kube

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	apisharding "k8s.io/apiserver/pkg/sharding"

	"github.com/ctrlkit/ctrlkit/internal/shardselector"
)

// TestShardSelectorAgainstKubeAPIServer compares memcluster's reading of
// shardSelector (internal/shardselector, which the root module needs
// without cel-go) with kube-apiserver's own (k8s.io/apiserver/pkg/sharding)
// on a corpus of selectors and seeded mutations of them: the same ranges,
// the same normalized string, the same message for every error but a CEL
// syntax error, where both say "CEL parse error".
func TestShardSelectorAgainstKubeAPIServer(t *testing.T) {
	corpus := []string{
		"",
		"shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') || shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f') || shardRange(object.metadata.uid, '0x000000000000000f', '0x0000000000000fff')",
		"(shardRange(object.metadata.namespace, \"0x0000000000000000\", '''0x8000000000000000''')) // c\n|| shardRange(object.metadata.namespace, r'0x8000000000000000', '0x10000000000000000')",
		`shardRange(object.metadata.namespace, '\x30x0000000000000000', '0x800000000000000\u0030')`,
		"object.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, 0, 8)", "shardRange(object.metadata.uid, 0u, 8)", "shardRange(object.metadata.uid, -1.5, 8)",
		"shardRange(object.metadata.uid, true, 8)", "shardRange(object.metadata.uid, null, 8)", "shardRange(object.metadata.uid, b'0x', 8)",
		"shardRange(object.metadata.uid, hex(0), '0x8')", "shardRange(object.metadata.uid, '0x0000000000000000', x)",
		"shardRange(object.metadata['uid'], '0x0000000000000000', '0x8000000000000000')",
		"shardRange('object', '0x0000000000000000', '0x8000000000000000')",
		"shardRange(.object.metadata.uid, '0x00', '0x80')", "shardRange(object.metadata.name, '0x00', '0x80')",
		"shardRange(object.metadata.uid, '0x0')", "shardRange()", "'0x00'", "object.metadata.uid", "[1, 2]", "{1: 2}", "a.b{c: 1}", "x",
		"object.metadata.uid > '0x0'", "!shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
		"true ? shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') : x",
		"shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')", "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x000000000000000000', '0x80')", "shardRange(object.metadata.uid, '0x0g', '0x80')",
		"shardRange(object.metadata.uid, '0x000000000000000A', '0x8000000000000000')", "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", "shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')", "shardRange(object.metadata.uid, '0x10000000000000000', '0xffffffffffffffff')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
		"namespace", "shardRange(object.metadata.uid, 9223372036854775808, 8)", "shardRange(object.metadata.uid, -9223372036854775808, 8)",
		"shardRange(object.metadata.uid, --1, 8)", "shardRange(object.metadata.uid, -'0x0', 8)", "shardRange(object.metadata.uid, 1e400, 8)",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000',)", "shardRange(object.in, '0x00', '0x80')",
		"shardRange(object.metadata.uid, a{in: 1}, '0x80')", "shardRange(object.metadata.uid, [,], '0x80')", "shardRange(object.metadata.uid, {,}, '0x80')",
	}
	rng := rand.New(rand.NewPCG(39, 1))
	pieces := []string{"(", ")", "'", "\"", ",", "||", "&&", "|", ".", " ", "0x", "0", "f", "g", "!", "-", "[", "]", "{", "}", "?", ":", "\\", "\n", "//", "in", "namespace", "u"}
	n := len(corpus)
	mutations := 3000 // CTRLKIT_SHARDSELECTOR_MUTATIONS=N tries N
	if m, err := strconv.Atoi(os.Getenv("CTRLKIT_SHARDSELECTOR_MUTATIONS")); err == nil && m > 0 {
		mutations = m
	}
	for range mutations {
		s := corpus[1+rng.IntN(n-1)]
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(s) + 1)
			switch rng.IntN(3) {
			case 0: // insert
				s = s[:i] + pieces[rng.IntN(len(pieces))] + s[i:]
			case 1: // delete
				if i < len(s) {
					s = s[:i] + s[min(len(s), i+1+rng.IntN(3)):]
				}
			default: // swap in another selector's tail
				o := corpus[1+rng.IntN(n-1)]
				s = s[:i] + o[rng.IntN(len(o)+1):]
			}
		}
		corpus = append(corpus, s)
	}
	syntax, agreed := 0, 0
	for _, in := range corpus {
		want, werr := apisharding.Parse(in)
		got, gerr := shardselector.Parse(in)
		switch {
		case werr == nil && gerr == nil:
			if want.String() != got.String() {
				t.Errorf("Parse(%q).String() = %q; kube-apiserver's %q", in, got.String(), want.String())
			}
			agreed++
		case werr == nil || gerr == nil:
			t.Errorf("Parse(%q) = %v; kube-apiserver's error is %v", in, gerr, werr)
		case strings.HasPrefix(werr.Error(), "CEL parse error: "):
			syntax++
			if !strings.HasPrefix(gerr.Error(), "CEL parse error: ") {
				t.Errorf("Parse(%q) = %q; kube-apiserver's is a syntax error: %q", in, gerr, werr)
			}
		default:
			agreed++
			if gerr.Error() != werr.Error() {
				t.Errorf("Parse(%q) = %q; kube-apiserver's %q", in, gerr, werr)
			}
		}
	}
	t.Logf("%d selectors: %d with the same answer, %d CEL syntax errors on both sides", len(corpus), agreed, syntax)
}
