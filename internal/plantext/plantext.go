// Package plantext prints the plans of ctrlkit's controllers (the String
// methods of deployment.Plan and replicaset.Plan) the one way: one item a
// line, for logs, golden files and test failures.
package plantext

import (
	"fmt"
	"strings"
	"time"
)

// Actions writes each action on a line of its own; a nil one reads
// "<nil action>".
func Actions[A fmt.Stringer](b *strings.Builder, actions []A) {
	for _, a := range actions {
		if any(a) == nil {
			b.WriteString("<nil action>\n")
			continue
		}
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
}

// After writes "<what> after <d>" on a line if d is positive.
func After(b *strings.Builder, what string, d time.Duration) {
	if d > 0 {
		fmt.Fprintf(b, "%s after %s\n", what, d)
	}
}
