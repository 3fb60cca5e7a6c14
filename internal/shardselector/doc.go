// Package shardselector reads the shardSelector parameter of a list or
// watch (metav1.ListOptions.ShardSelector, KEP-5866) as kube-apiserver
// v1.37 does with its ShardedListAndWatch gate on, into apimachinery's
// [sharding.Selector]:
//
//	shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')
//	shardRange(object.metadata.uid, '0x…', '0x…') || shardRange(object.metadata.uid, '0x…', '0x…')
//
// kube-apiserver parses the parameter as a CEL expression (with cel-go,
// which the root module may not depend on) and then walks the tree: only
// shardRange calls joined by ||, a field path of object.metadata.uid or
// object.metadata.namespace, and bounds that are string literals of
// exactly 16 lowercase hex digits after "0x" (or "0x10000000000000000",
// 2^64), start below end, one field for every range. [Parse] reads the
// same language with a parser of its own for the part of CEL's grammar an
// expression can be written in (literals of every kind and their escapes,
// identifiers, selections, calls, the unary, arithmetic, relational,
// logical and conditional operators, lists, maps and messages, comments)
// and answers every rule of the walk with kube-apiserver's message.
//
// Deviation: a syntax error (what cel-go itself refuses) is reported as
// "CEL parse error: Syntax error: …" with a message of ours, where cel-go
// gives ANTLR's ("mismatched input … expecting …"). kube's tests compare
// both parsers on a corpus of selectors (kube/shardselector_test.go).
//
// Ranges include their start and exclude their end: an object matches when
// start <= FNV-1a-64(field) < end ([sharding.HexLess]).
package shardselector
