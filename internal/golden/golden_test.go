package golden

import (
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("Diff(equal) = %q; want empty", d)
	}
	got := Diff("a\nb\nc", "a\nx\nc")
	want := "+   2 | x\n-   2 | b\n"
	if got != want {
		t.Errorf("Diff = %q; want %q", got, want)
	}
}

func TestCheckUpdateThenCompare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "g.txt")
	Check(t, path, "hello\n", true)
	Check(t, path, "hello\n", false)
}
