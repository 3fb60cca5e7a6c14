package shard_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/shard"
)

// Cut the hash space in four, and write two of the ranges as the shard
// selector kube-apiserver takes.
func ExampleSplit() {
	ranges, err := shard.Split(4)
	if err != nil {
		panic(err)
	}
	set := shard.MustSet(ranges[0], ranges[3])
	fmt.Println(set.Selector())
	fmt.Println(set.ContainsNamespace("payments"), set.ContainsNamespace("checkout"))
	// Output:
	// shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')
	// true false
}

// Overlapping or malformed ranges are refused, with kube-apiserver's
// words for a malformed selector.
func ExampleParseSelector() {
	_, err := shard.ParseSelector("shardRange(object.metadata.namespace, '0x0', '0x8000000000000000')")
	fmt.Println(err)
	_, err = shard.ParseSelector("shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || " +
		"shardRange(object.metadata.namespace, '0x4000000000000000', '0x10000000000000000')")
	fmt.Println(err)
	// Output:
	// shard: invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)
	// shard: ranges [0x0000000000000000, 0x8000000000000000) and [0x4000000000000000, 0x10000000000000000) overlap
}

// Who owns each of 8 ranges, with three members and after one leaves:
// mostly the leaver's ranges move.
func ExampleAssign() {
	fmt.Println(shard.Assign([]string{"a", "b", "c"}, 8))
	fmt.Println(shard.Assign([]string{"a", "c"}, 8))
	// Output:
	// [b b c c c a a a]
	// [c c c c a a a a]
}
