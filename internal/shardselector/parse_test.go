package shardselector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/sharding"
)

const (
	zero = "0x0000000000000000"
	half = "0x8000000000000000"
	top  = "0x10000000000000000"
)

func TestParse(t *testing.T) {
	ns := func(start, end string) sharding.ShardRangeRequirement {
		return sharding.ShardRangeRequirement{Key: FieldNamespace, Start: start, End: end}
	}
	uid := func(start, end string) sharding.ShardRangeRequirement {
		return sharding.ShardRangeRequirement{Key: FieldUID, Start: start, End: end}
	}
	tests := []struct {
		name string
		in   string
		want []sharding.ShardRangeRequirement
	}{
		{"one range", "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')", []sharding.ShardRangeRequirement{ns(zero, half)}},
		{"the whole space", "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')", []sharding.ShardRangeRequirement{uid(zero, top)}},
		{"three ranges in order", "shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
			[]sharding.ShardRangeRequirement{uid("0x0000000000000005", "0x000000000000000a"), uid(zero, "0x0000000000000005"), uid(half, top)}},
		{"parentheses, spaces, comments, double quotes", " ( shardRange( object . metadata . namespace ,\"0x0000000000000000\" , '0x8000000000000000' ) ) // first half\n || (shardRange(object.metadata.namespace, '''0x8000000000000000''', r'0x10000000000000000'))",
			[]sharding.ShardRangeRequirement{ns(zero, half), ns(half, top)}},
		{"escapes in a bound", `shardRange(object.metadata.namespace, '\x30x0000000000000000', '0x800000000000000\u0030')`, []sharding.ShardRangeRequirement{ns(zero, half)}},
		{"overlapping ranges are accepted", "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
			[]sharding.ShardRangeRequirement{ns(zero, half), ns(zero, half)}},
		{"a receiver call is read as the call", "object.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')", []sharding.ShardRangeRequirement{uid(zero, half)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, sel.Requirements()); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestParseErrors checks kube-apiserver's message for every rule of its
// walk (k8s.io/apiserver/pkg/sharding's parser at v0.37.1).
func TestParseErrors(t *testing.T) {
	r := func(f, a, b string) string { return "shardRange(" + f + ", " + a + ", " + b + ")" }
	tests := []struct{ in, want string }{
		{"", "empty shard selector is not allowed; omit the parameter for unfiltered lists"},
		{"   ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"},
		{"'0x00'", "unexpected expression kind 5; expected shardRange() call or || operator"},
		{"object.metadata.uid", "unexpected expression kind 7; expected shardRange() call or || operator"},
		{"[1, 2]", "unexpected expression kind 4; expected shardRange() call or || operator"},
		{"invalidFunc(object.metadata.uid, '0x00', '0x80')", `unsupported function "invalidFunc"; only shardRange() and || are allowed`},
		{r("object.metadata.uid", "'0x0000000000000000'", "'0x8'") + " && " + r("object.metadata.uid", "'0x8'", "'0xf'"), `unsupported function "_&&_"; only shardRange() and || are allowed`},
		{"object.metadata.uid > '0x0'", `unsupported function "_>_"; only shardRange() and || are allowed`},
		{"!" + r("object.metadata.uid", "'0x0000000000000000'", "'0x8000000000000000'"), `unsupported function "!_"; only shardRange() and || are allowed`},
		{"shardRange(object.metadata.uid, '0x0')", "shardRange() requires exactly 3 arguments, got 2"},
		{r("'object'", "'0x0000000000000000'", "'0x8000000000000000'"), "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 5"},
		{r("object.metadata['uid']", "'0x0000000000000000'", "'0x8000000000000000'"), "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 1"},
		{r("object.metadata.name", "'0x00'", "'0x80'"), `unsupported field path "object.metadata.name"; supported: object.metadata.uid, object.metadata.namespace`},
		{r("metadata.namespace", "'0x00'", "'0x80'"), `unsupported field path "metadata.namespace"; supported: object.metadata.uid, object.metadata.namespace`},
		{r(".object.metadata.uid", "'0x00'", "'0x80'"), `unsupported field path ".object.metadata.uid"; supported: object.metadata.uid, object.metadata.namespace`},
		{r("object.metadata.uid", "0", "8"), "hexStart must be a string literal, got int64"},
		{r("object.metadata.uid", "0u", "8"), "hexStart must be a string literal, got uint64"},
		{r("object.metadata.uid", "-0.5", "8"), "hexStart must be a string literal, got float64"},
		{r("object.metadata.uid", "true", "8"), "hexStart must be a string literal, got bool"},
		{r("object.metadata.uid", "null", "8"), "hexStart must be a string literal, got structpb.NullValue"},
		{r("object.metadata.uid", "b'0x00'", "8"), "hexStart must be a string literal, got []uint8"},
		{r("object.metadata.uid", "hex(0)", "'0x8'"), "hexStart must be a string literal (e.g. '0xff'), got expression kind 1"},
		{r("object.metadata.uid", "'0x0000000000000000'", "x"), "hexEnd must be a string literal (e.g. '0xff'), got expression kind 3"},
		{r("object.metadata.uid", "'0000000000000000'", "'0x8000000000000000'"), `hexStart must have '0x' prefix, got "0000000000000000"`},
		{r("object.metadata.uid", "'0x'", "'0x8000000000000000'"), "hexStart: hex value is required after '0x'"},
		{r("object.metadata.uid", "'0x000000000000000000'", "'0x80'"), `hexStart: hex value too long (18 chars, max 17): "000000000000000000"`},
		{r("object.metadata.uid", "'0x0g'", "'0x80'"), `hexStart: invalid hex character "g" in "0x0g"`},
		{r("object.metadata.uid", "'0x000000000000000A'", "'0x80'"), `hexStart: invalid hex character "A" in "0x000000000000000A"`},
		{r("object.metadata.uid", "'0x0000000000000000'", "'0x20000000000000000'"), `hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "0x20000000000000000"`},
		{r("object.metadata.uid", "'0x0'", "'0x8000000000000000'"), `hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`},
		{r("object.metadata.uid", "'0x0000000000000000'", "'0xff'"), `hexEnd must be a 0x-prefixed 16-digit hex value, got "0xff" (did you mean "0x00000000000000ff"?)`},
		{r("object.metadata.uid", "'0x8000000000000000'", "'0x8000000000000000'"), "shard range start 0x8000000000000000 must be less than end 0x8000000000000000"},
		{r("object.metadata.uid", "'0x10000000000000000'", "'0xffffffffffffffff'"), "shard range start 0x10000000000000000 must be less than end 0xffffffffffffffff"},
		{r("object.metadata.uid", "'0x0000000000000000'", "'0x8000000000000000'") + " || " + r("object.metadata.namespace", "'0x8000000000000000'", "'0x10000000000000000'"),
			`all shard ranges must use the same field, got "object.metadata.uid" and "object.metadata.namespace"`},
		{"namespace", "CEL parse error: reserved identifier: namespace"},
		{r("object.metadata.uid", "9223372036854775808", "8"), "CEL parse error: invalid int literal"},
		{r("object.metadata.uid", "1e400", "8"), "CEL parse error: invalid double literal"},
		{r("object.metadata.uid", "[,]", "8"), "hexStart must be a string literal (e.g. '0xff'), got expression kind 4"},
		{r("object.metadata.uid", "[1,]", "8"), "hexStart must be a string literal (e.g. '0xff'), got expression kind 4"},
		{r("object.metadata.uid", "{,}", "8"), "hexStart must be a string literal (e.g. '0xff'), got expression kind 6"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}

// TestParseSyntaxErrors checks that what CEL refuses is a CEL parse error.
func TestParseSyntaxErrors(t *testing.T) {
	for _, in := range []string{
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
		"shardRange(object.metadata.uid, '0x0000000000000000, '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') #",
		"shardRange(object..metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '\\q', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		"a ? b",
		"object.?metadata",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000',)", // a call takes no trailing comma
		"shardRange(object.in, '0x0000000000000000', '0x8000000000000000')",            // a keyword is no field name
		"shardRange(object.metadata.uid, a{in: 1}, '0x8000000000000000')",              // nor a message field's
	} {
		_, err := Parse(in)
		if err == nil || err.Error()[:len("CEL parse error: ")] != "CEL parse error: " {
			t.Errorf("Parse(%q) = %v; want a CEL parse error", in, err)
		}
	}
}

// TestSelectorString checks the normalized form kube-apiserver echoes in
// a list's metadata.shardInfo.selector.
func TestSelectorString(t *testing.T) {
	sel, err := Parse(" shardRange( object.metadata.namespace,\"0x0000000000000000\",'0x8000000000000000' )||shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')")
	if err != nil {
		t.Fatal(err)
	}
	want := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
	if got := sel.String(); got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}
