package doccheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// repoRoot is the root of this checkout: three directories up from this
// package (controllerruntime/internal/doccheck).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository's root is not at %s: %v", root, err)
	}
	return root
}

// TestDocsCompile type-checks and vets every ```go block of README.md and
// docs/*.md (see the package documentation for the convention).
func TestDocsCompile(t *testing.T) {
	root := repoRoot(t)
	files, err := MarkdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	for _, f := range files {
		bs, err := Blocks(root, f)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatalf("no ```go block in %s", strings.Join(files, ", "))
	}
	modules, err := repoModules(root)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	needed := map[string]bool{}
	bad := false
	for _, b := range blocks {
		imports, problems := b.Check()
		for _, p := range problems {
			t.Errorf("%s: %s", b, p)
			bad = true
		}
		for _, im := range imports {
			if m := moduleOf(modules, im); m != "" {
				needed[m] = true
			}
		}
		pkg := filepath.Join(dir, b.Dir())
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "block.go"), b.Source(root), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if bad {
		t.FailNow()
	}
	if err := writeModule(dir, root, modules, needed); err != nil {
		t.Fatal(err)
	}

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to compile the blocks with: %v", err)
	}
	start := time.Now()
	// go vet type-checks every block as the compiler does (and runs vet's
	// checks); go build would add nothing but the link of each package
	// main, seconds of CPU apiece, and the check that a package main has
	// a func main, which Check makes.
	for _, args := range [][]string{{"vet", "./..."}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = offlineEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			msg := strings.ReplaceAll(string(out), root+string(filepath.Separator), "")
			if bytes.Contains(out, []byte("GOPROXY=off")) || bytes.Contains(out, []byte("module lookup disabled")) {
				msg += "\n(the blocks are compiled offline, from the module cache: a module they need is not in it;" +
					" run `go mod download` in the repository's modules, or the go command that imports it, first)"
			}
			t.Fatalf("go %s of the %d Go blocks of %s: %v\n%s", strings.Join(args, " "), len(blocks), strings.Join(files, ", "), err, msg)
		}
	}
	t.Logf("%d Go blocks of %d files type-checked and vetted in %v", len(blocks), len(files), time.Since(start).Round(time.Millisecond))
}

// offlineEnv is the environment of the go commands that build the
// blocks: this process's, with no network and no workspace.
func offlineEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, k := range []string{"GOFLAGS=", "GOPROXY=", "GOSUMDB=", "GOWORK=", "GOTOOLCHAIN="} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
	// -mod=mod lets the go command add the requirements of what the blocks
	// import, from the build list of the replaced modules; GOSUMDB=off
	// lets it take the checksums of the module cache's copies, which the
	// go command verified when it downloaded them.
	return append(env, "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
}

// module is one go.mod of the repository.
type module struct {
	path string // its module path
	dir  string // its directory, absolute
}

// repoModules returns the repository's modules (every go.mod outside
// testdata), the longest path first.
func repoModules(root string) ([]module, error) {
	var out []module
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		path := modulePath(data)
		if path == "" {
			return fmt.Errorf("%s: no module path", p)
		}
		out = append(out, module{path: path, dir: filepath.Dir(p)})
		return nil
	})
	slices.SortFunc(out, func(a, b module) int { return len(b.path) - len(a.path) })
	return out, err
}

// moduleOf returns the path of the repository's module that holds the
// package importPath, or "".
func moduleOf(modules []module, importPath string) string {
	for _, m := range modules {
		if importPath == m.path || strings.HasPrefix(importPath, m.path+"/") {
			return m.path
		}
	}
	return ""
}

// writeModule writes the go.mod and go.sum of the blocks' module in dir:
// it requires the modules needed (and the root module, which every
// nested one requires), each replaced by its directory, as a user of a
// clone does; go.sum is the union of theirs.
func writeModule(dir, root string, modules []module, needed map[string]bool) error {
	var mod, sum bytes.Buffer
	mod.WriteString("module ctrlkit.example/docblocks\n\ngo 1.26.0\n\n")
	seen := map[string]bool{}
	for _, m := range modules {
		fmt.Fprintf(&mod, "replace %s => %s\n", m.path, m.dir)
		if !needed[m.path] && m.dir != root {
			continue
		}
		fmt.Fprintf(&mod, "require %s v0.0.0\n", m.path)
		data, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if line != "" && !seen[line] {
				seen[line] = true
				sum.WriteString(line)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), mod.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.sum"), sum.Bytes(), 0o644)
}

// modulePath returns the module path a go.mod declares, or "".
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// skipDir reports whether the go command ignores a directory of this
// name: testdata, and names starting with "." or "_".
func skipDir(name string) bool {
	return name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// TestReadmeMapsEveryPackage fails for a package directory of any of the
// repository's modules that README.md does not name: as `path`, as a link
// to (path), or under a `path/...` entry.
func TestReadmeMapsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := packageDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	var missing []string
	for _, p := range pkgs {
		if !mapped(text, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("README.md's map does not name %d of the %d packages (add each as `path`, a link to (path), or a `path/...` entry for a tree):\n  %s",
			len(missing), len(pkgs), strings.Join(missing, "\n  "))
	}
}

// mapped reports whether the README text names the package directory p.
func mapped(text, p string) bool {
	if strings.Contains(text, "`"+p+"`") || strings.Contains(text, "("+p+")") || strings.Contains(text, "("+p+"/)") {
		return true
	}
	for dir := p; dir != "."; dir = filepath.ToSlash(filepath.Dir(dir)) {
		if strings.Contains(text, "`"+dir+"/...`") {
			return true
		}
	}
	return false
}

// packageDirs returns the directories under root, relative to it, that
// hold Go files (with any build tags, tests included): the packages of
// every module, as `go list -tags e2e ./...` in each would list them.
func packageDirs(root string) ([]string, error) {
	set := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			set[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, err
}
