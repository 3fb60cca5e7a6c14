// Package golden compares test output with golden files and rewrites them
// on request. It uses the standard library only.
//
// # Usage
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
//	func TestTrace(t *testing.T) {
//		golden.Check(t, "testdata/trace.txt", render(), *update)
//	}
//
// Run `go test -update` to rewrite the files, then review them as a diff.
package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check fails t unless got equals the contents of path. With update set,
// it writes got to path instead (creating directories) and passes.
func Check(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := Diff(string(want), got); d != "" {
		t.Errorf("%s mismatch (-want +got); run go test -update to accept:\n%s", path, d)
	}
}

// Diff returns a line diff of want and got ("" if equal): for each run of
// differing lines, the lines of want prefixed with "-" and those of got
// prefixed with "+", with line numbers. It aligns on the longest common
// subsequence, which is fine for files of a few thousand lines.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// lcs[i][j] = length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+%4d | %s\n", j+1, b[j])
			j++
		default:
			fmt.Fprintf(&out, "-%4d | %s\n", i+1, a[i])
			i++
		}
	}
	return out.String()
}
