package replicaset_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// shellFiles may take a context, hold clients and call the consumer
// interfaces; interfaces.go only declares them. Every other file is the
// pure core.
var shellFiles = map[string]bool{
	"reconciler.go": true, "apply.go": true, "controller.go": true, "interfaces.go": true, "tracking.go": true,
	"podbuf.go":   true,
	"expiry.go":   true, // live reads before trusting an expired expectation
	"handlers.go": true,
}

// TestCoreIsPure checks, from the source, the house rules for the core
// files: no context, no clock, no goroutines, no time.Now, and the
// package's import rules.
func TestCoreIsPure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"/rollout", "/deployment", "/examples", "k8s.io/client-go", "k8s.io/kubernetes"} {
				if strings.Contains(path, banned) {
					t.Errorf("%s imports %s", name, path)
				}
			}
			if !shellFiles[name] {
				switch path {
				case "context", "github.com/ctrlkit/ctrlkit/clock", "github.com/ctrlkit/ctrlkit/informer",
					"github.com/ctrlkit/ctrlkit/workqueue", "github.com/go-logr/logr":
					t.Errorf("core file %s imports %s", name, path)
				}
			}
		}
		if shellFiles[name] {
			continue
		}
		full, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: core file starts a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since") {
					t.Errorf("%s: core file reads the clock (time.%s)", fset.Position(n.Pos()), n.Sel.Name)
				}
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "metav1" && n.Sel.Name == "Now" {
					t.Errorf("%s: core file reads the clock (metav1.Now)", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}
