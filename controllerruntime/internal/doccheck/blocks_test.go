package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Block is one ```go block of a Markdown file.
type Block struct {
	File string // the Markdown file, relative to the repository's root
	Line int    // the line of the block's first line of code (1-based)
	N    int    // its index among the file's Go blocks (0-based)
	Code []byte // its text, without the fences and their indentation
}

func (b Block) String() string { return fmt.Sprintf("%s:%d (Go block %d)", b.File, b.Line, b.N+1) }

// Blocks returns the ```go blocks of the Markdown file rel under root.
// A fence may be indented (a block in a list item); that indentation is
// removed from the block's lines.
func Blocks(root, rel string) ([]Block, error) {
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out    []Block
		cur    *Block
		indent string
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " \t")
		if cur == nil {
			if info, ok := strings.CutPrefix(trimmed, "```"); ok && isGoInfo(info) {
				cur = &Block{File: rel, Line: line + 1, N: len(out)}
				indent = text[:len(text)-len(trimmed)]
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") && strings.TrimSpace(strings.TrimLeft(trimmed, "`")) == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.Code = append(cur.Code, strings.TrimPrefix(text, indent)...)
		cur.Code = append(cur.Code, '\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```go block that never ends", rel, cur.Line-1)
	}
	return out, nil
}

// isGoInfo reports whether a fence's info string names Go: "go", or
// "go" followed by attributes.
func isGoInfo(info string) bool {
	fields := strings.Fields(info)
	return len(fields) > 0 && (fields[0] == "go" || fields[0] == "golang")
}

// Check parses b as a complete Go file and returns the problems the
// convention forbids: no package clause, a package main without a func
// main, text gofmt would change. It returns b's import paths.
func (b Block) Check() (imports []string, problems []string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "block.go", b.Code, parser.ParseComments)
	if err != nil {
		if !bytes.Contains(b.Code, []byte("package ")) {
			return nil, []string{"not a complete Go file: it has no package clause (write the package clause and imports, or fence a fragment as ```text)"}
		}
		return nil, []string{fmt.Sprintf("does not parse: %v", relines(err.Error(), b.Line))}
	}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err == nil {
			imports = append(imports, p)
		}
	}
	if f.Name.Name == "main" && !hasMain(f) {
		problems = append(problems, "package main without a func main (the build would fail; name the package otherwise)")
	}
	if formatted, err := format.Source(b.Code); err == nil && !bytes.Equal(formatted, b.Code) {
		problems = append(problems, "not gofmt-formatted: "+firstDifference(b.Code, formatted, b.Line))
	}
	return imports, problems
}

// firstDifference names the first line of have that gofmt changes, in
// the Markdown file's numbering (the block starts at line start).
func firstDifference(have, want []byte, start int) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			return fmt.Sprintf("line %d is %q, gofmt makes it %q (run gofmt on the block)", start+i, hl, wl)
		}
	}
	return "gofmt changes it"
}

func hasMain(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			return true
		}
	}
	return false
}

// relines turns "block.go:L:C: msg" positions into the Markdown file's
// lines, for a block that starts at line start.
func relines(msg string, start int) string {
	rest, ok := strings.CutPrefix(msg, "block.go:")
	if !ok {
		return msg
	}
	num, tail, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return msg
	}
	return fmt.Sprintf("line %d:%s", start+n-1, tail)
}

// Dir is the package directory of b in the temporary module: its file's
// name and its index, "docs_testbench_2".
func (b Block) Dir() string {
	stem := strings.TrimSuffix(filepath.ToSlash(b.File), ".md")
	stem = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '_'
	}, stem)
	return fmt.Sprintf("%s_%d", stem, b.N+1)
}

// Source is the file written for b: a //line directive, so that the
// compiler and vet name the Markdown file and line, then the block.
func (b Block) Source(root string) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "//line %s:%d\n", filepath.Join(root, b.File), b.Line)
	buf.Write(b.Code)
	return buf.Bytes()
}

// MarkdownFiles returns README.md and docs/*.md under root, relative to
// it, sorted.
func MarkdownFiles(root string) ([]string, error) {
	out := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out[1:])
	return out, nil
}
