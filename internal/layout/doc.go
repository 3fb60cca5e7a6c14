// Package layout holds no code, only a test that enforces the module's
// import rules (STYLE.md §3.2): which packages may import which, and that
// the root module never depends on client-go.
package layout
