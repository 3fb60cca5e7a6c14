// Package doccheck holds the tests that keep this repository's user
// documentation true: every ```go block of README.md and docs/*.md
// compiles against the repository's modules, and the README's map names
// every package. It has no code of its own; it lives in the
// controller-runtime module because that module's build graph, and the
// build cache CI fills before it runs, cover what the blocks import.
//
// # The convention for Go blocks
//
// A block fenced with ```go is a complete Go file: a package clause, its
// imports, then declarations, formatted as gofmt formats it. A block of
// package main has a func main. Anything else (a fragment, a shell
// session, output) goes in a block fenced otherwise (```sh, ```console,
// ```text, ```yaml): those are free-form.
//
// TestDocsCompile writes each block to its own package directory of a
// temporary module that requires the repository's modules the blocks
// import, replaced by this checkout's directories (exactly what the
// README's install section tells a user to do), and runs one go vet over
// all of them (the compiler's type checking and vet's checks; nothing is
// linked), offline: GOPROXY=off, GOFLAGS=-mod=mod, with the module cache
// and build cache of the machine. Errors point at
// the Markdown file and line (each block starts with a //line directive).
//
// TestReadmeMapsEveryPackage walks the repository and fails for a package
// directory that README.md does not name, as `path` or as a link to
// (path), or under a `path/...` entry.
package doccheck
