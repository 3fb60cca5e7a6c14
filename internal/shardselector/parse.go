package shardselector

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"
)

// The field paths a shard range may hash.
const (
	FieldNamespace = "object.metadata.namespace"
	FieldUID       = "object.metadata.uid"
)

// Parse reads a shardSelector as kube-apiserver v1.37 does
// (k8s.io/apiserver/pkg/sharding.Parse): the ranges in the order they are
// written, or an error with kube-apiserver's message (see the package
// documentation for syntax errors). An empty selector is an error: a
// request without one is not sharded.
func Parse(expr string) (sharding.Selector, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, errors.New("empty shard selector is not allowed; omit the parameter for unfiltered lists")
	}
	root, err := parseCEL(expr)
	if err != nil {
		return nil, fmt.Errorf("CEL parse error: %s", err.Error())
	}
	reqs, err := walk(root)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs[1:] {
		if r.Key != reqs[0].Key {
			return nil, fmt.Errorf("all shard ranges must use the same field, got %q and %q", reqs[0].Key, r.Key)
		}
	}
	return sharding.NewSelector(reqs...), nil
}

// walk collects the ranges of a tree of shardRange calls joined by ||.
func walk(e *node) ([]sharding.ShardRangeRequirement, error) {
	if e.kind != kindCall {
		return nil, fmt.Errorf("unexpected expression kind %d; expected shardRange() call or || operator", e.kind)
	}
	switch e.fn {
	case fnOr:
		l, err := walk(e.args[0])
		if err != nil {
			return nil, err
		}
		r, err := walk(e.args[1])
		if err != nil {
			return nil, err
		}
		return append(l, r...), nil
	case "shardRange":
		r, err := shardRange(e.args)
		if err != nil {
			return nil, err
		}
		return []sharding.ShardRangeRequirement{r}, nil
	}
	return nil, fmt.Errorf("unsupported function %q; only shardRange() and || are allowed", e.fn)
}

// shardRange reads the arguments of shardRange(field, start, end).
func shardRange(args []*node) (sharding.ShardRangeRequirement, error) {
	var none sharding.ShardRangeRequirement
	if len(args) != 3 {
		return none, fmt.Errorf("shardRange() requires exactly 3 arguments, got %d", len(args))
	}
	field, err := fieldPath(args[0])
	if err != nil {
		return none, fmt.Errorf("shardRange() first argument: %w", err)
	}
	if field != FieldUID && field != FieldNamespace {
		return none, fmt.Errorf("unsupported field path %q; supported: object.metadata.uid, object.metadata.namespace", field)
	}
	start, err := hexBound(args[1], "hexStart")
	if err != nil {
		return none, err
	}
	end, err := hexBound(args[2], "hexEnd")
	if err != nil {
		return none, err
	}
	if !sharding.HexLess(start, end) {
		return none, fmt.Errorf("shard range start %s must be less than end %s", start, end)
	}
	return sharding.ShardRangeRequirement{Key: field, Start: start, End: end}, nil
}

// fieldPath is the dotted path of an identifier and the selections on it.
func fieldPath(e *node) (string, error) {
	switch e.kind {
	case kindIdent:
		return e.name, nil
	case kindSelect:
		op, err := fieldPath(e.operand)
		if err != nil {
			return "", err
		}
		return op + "." + e.name, nil
	}
	return "", fmt.Errorf("expected field path (e.g. object.metadata.uid), got expression kind %d", e.kind)
}

// hexBound checks that e is a bound: a string literal "0x" followed by
// 16 lowercase hex digits, or "0x10000000000000000".
func hexBound(e *node, name string) (string, error) {
	if e.kind != kindLiteral {
		return "", fmt.Errorf("%s must be a string literal (e.g. '0xff'), got expression kind %d", name, e.kind)
	}
	if e.goType != "string" {
		return "", fmt.Errorf("%s must be a string literal, got %s", name, e.goType)
	}
	s := e.str
	hex, ok := strings.CutPrefix(s, "0x")
	switch {
	case !ok:
		return "", fmt.Errorf("%s must have '0x' prefix, got %q", name, s)
	case hex == "":
		return "", fmt.Errorf("%s: hex value is required after '0x'", name)
	case len(hex) > 17:
		return "", fmt.Errorf("%s: hex value too long (%d chars, max 17): %q", name, len(hex), hex)
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("%s: invalid hex character %q in %q", name, string(c), s)
		}
	}
	if len(hex) == 17 && s != sharding2to64 {
		return "", fmt.Errorf("%s: 17-digit hex value must be '0x10000000000000000' (2^64), got %q", name, s)
	}
	if len(hex) < 16 {
		return "", fmt.Errorf("%s must be a 0x-prefixed 16-digit hex value, got %q (did you mean %q?)", name, s, "0x"+strings.Repeat("0", 16-len(hex))+hex)
	}
	return s, nil
}

// sharding2to64 is the end of the hash space, 2^64.
const sharding2to64 = "0x10000000000000000"
