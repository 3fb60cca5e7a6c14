// The formatting logic below follows go-spew's (format.go), whose licence
// asks that its notice go with any copy or derivative:
//
//	Copyright (c) 2013-2016 Dave Collins <dave@davec.name>
//
//	Permission to use, copy, modify, and distribute this software for any
//	purpose with or without fee is hereby granted, provided that the above
//	copyright notice and this permission notice appear in all copies.
//
//	THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
//	WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
//	MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
//	ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
//	WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
//	ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
//	OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.

package rollout

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
)

// This file computes FNV-32a over the bytes dump.ForHash would return for a
// PodTemplateSpec, without building them: go-spew's Sprintf("%#v") with
// upstream's ConfigState{SortKeys, DisableMethods, SpewKeys, …} (the other
// fields only affect Dump). It is a port of go-spew's formatState (format.go,
// v1.1.2-0.20180830191138-d8f796af33cc, the version k8s.io/utils/dump
// pins), step for step, including its quirks:
//
//   - the type of a value is printed in parentheses unless its container
//     already said it (pointer targets, slice and map elements, map keys);
//   - a nil pointer printed where its type is wanted is "(*T)<nil>",
//     elsewhere "<nil>", and the latter leaves the "type already said" flag
//     set for whatever comes next (spew's ignoreNextType);
//   - a pointer already followed at a shallower depth of the current path
//     prints "<shown>" (spew's cycle check, which aliased pointers also
//     trigger), with spew's map of pointers kept as a stack by depth;
//   - map keys sorted by their string value.
//
// The type information spew computes on every value (type names, field
// names) is computed once per type: the graph of PodTemplateSpec is built
// on first use and hashers are pooled, caches no caller can observe. What the port does not cover falls back
// to spew itself: a non-nil interface value (its dynamic type is not in the
// precomputed graph) and a map whose keys are not strings (spew sorts those
// by their own spew rendering). PodTemplateSpec of k8s.io/api v0.37 has
// neither. TestSpewHashMatchesSpew checks the port against spew on random
// templates (aliased pointers included), TestSpewHashQuirks on values made
// for each quirk above.

// FNV-32a (hash/fnv).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// spewType is what go-spew looks up on a reflect.Type while formatting a
// value of it.
type spewType struct {
	kind   reflect.Kind
	typ    reflect.Type
	paren  string    // "(" + typ.String() + ")"
	name   string    // typ.String()
	stars  int       // strings.Count(name, "*")
	elem   *spewType // Pointer, Slice, Array, Map
	key    *spewType // Map
	fields []spewField
}

type spewField struct {
	label string // "Name:"
	t     *spewType
}

// spewTypes builds the spewType graph of t.
func spewTypes(t reflect.Type, seen map[reflect.Type]*spewType) *spewType {
	if st, ok := seen[t]; ok {
		return st
	}
	name := t.String()
	st := &spewType{kind: t.Kind(), typ: t, paren: "(" + name + ")", name: name, stars: strings.Count(name, "*")}
	seen[t] = st
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		st.elem = spewTypes(t.Elem(), seen)
	case reflect.Map:
		st.key, st.elem = spewTypes(t.Key(), seen), spewTypes(t.Elem(), seen)
	case reflect.Struct:
		st.fields = make([]spewField, t.NumField())
		for i := range st.fields {
			f := t.Field(i)
			st.fields[i] = spewField{label: f.Name + ":", t: spewTypes(f.Type, seen)}
		}
	}
	return st
}

var podTemplateSpewType = sync.OnceValue(func() *spewType {
	return spewTypes(reflect.TypeFor[corev1.PodTemplateSpec](), map[reflect.Type]*spewType{})
})

type spewPointer struct {
	addr  uintptr
	depth int
}

// spewHasher is go-spew's formatState, writing into an FNV-32a sum.
type spewHasher struct {
	sum            uint32
	depth          int
	ignoreNextType bool
	pointers       []spewPointer // spew's pointers map: depths never decrease along the slice
	fallback       bool          // met something the port does not cover
	num            [64]byte
	ptrBuf         [16]spewPointer
}

var spewHashers = sync.Pool{New: func() any { return new(spewHasher) }}

// templateSum returns FNV-32a over dump.ForHash(*t): the hash state after
// it, for more bytes to be written.
func templateSum(t *corev1.PodTemplateSpec) uint32 {
	if sum, ok := spewSum(podTemplateSpewType(), reflect.ValueOf(t).Elem()); ok {
		return sum
	}
	var h spewHasher
	h.sum = fnvOffset32
	h.writeString(dump.ForHash(*t))
	return h.sum
}

// spewSum returns FNV-32a over what go-spew's %#v would print for v, of
// the type t describes; ok is false if the port does not cover v.
func spewSum(t *spewType, v reflect.Value) (sum uint32, ok bool) {
	h := spewHashers.Get().(*spewHasher)
	defer spewHashers.Put(h)
	h.sum, h.depth, h.ignoreNextType, h.fallback = fnvOffset32, 0, false, false
	h.pointers = h.ptrBuf[:0]
	h.format(t, v)
	return h.sum, !h.fallback
}

func (h *spewHasher) writeString(s string) {
	sum := h.sum
	for i := 0; i < len(s); i++ {
		sum ^= uint32(s[i])
		sum *= fnvPrime32
	}
	h.sum = sum
}

func (h *spewHasher) writeBytes(b []byte) {
	sum := h.sum
	for _, c := range b {
		sum ^= uint32(c)
		sum *= fnvPrime32
	}
	h.sum = sum
}

func (h *spewHasher) writeByte(c byte) {
	h.sum = (h.sum ^ uint32(c)) * fnvPrime32
}

func (h *spewHasher) writeStars(n int) {
	for range n {
		h.writeByte('*')
	}
}

// unpack is spew's unpackValue.
func (h *spewHasher) unpack(t *spewType, v reflect.Value) (*spewType, reflect.Value) {
	if t.kind == reflect.Interface {
		h.ignoreNextType = false
		if !v.IsNil() {
			h.fallback = true // the dynamic type is not in the graph
		}
	}
	return t, v
}

// formatPtr is spew's formatPtr with the '#' flag (types shown) and without
// '+' (no addresses).
func (h *spewHasher) formatPtr(t *spewType, v reflect.Value) {
	if v.IsNil() && h.ignoreNextType {
		h.writeString("<nil>")
		return
	}
	// Forget the pointers at or below the current depth.
	for len(h.pointers) > 0 && h.pointers[len(h.pointers)-1].depth >= h.depth {
		h.pointers = h.pointers[:len(h.pointers)-1]
	}
	nilFound, cycleFound := false, false
	indirects := 0
	vt, ve := t, v
	for vt.kind == reflect.Pointer {
		if ve.IsNil() {
			nilFound = true
			break
		}
		indirects++
		addr := ve.Pointer()
		if h.shownAbove(addr) {
			cycleFound = true
			indirects--
			break
		}
		h.pointers = append(h.pointers, spewPointer{addr, h.depth})
		vt, ve = vt.elem, ve.Elem()
		if vt.kind == reflect.Interface {
			if ve.IsNil() {
				nilFound = true
				break
			}
			h.fallback = true
			return
		}
	}
	if !h.ignoreNextType {
		h.writeByte('(')
		h.writeStars(indirects)
		h.writeString(vt.name)
		h.writeByte(')')
	} else {
		if nilFound || cycleFound {
			indirects += vt.stars
		}
		h.writeByte('<')
		h.writeStars(indirects)
		h.writeByte('>')
	}
	switch {
	case nilFound:
		h.writeString("<nil>")
	case cycleFound:
		h.writeString("<shown>")
	default:
		h.ignoreNextType = true
		h.format(vt, ve)
	}
}

// shownAbove reports whether addr was followed at a shallower depth of the
// current path (spew: pd, ok := f.pointers[addr]; ok && pd < f.depth).
func (h *spewHasher) shownAbove(addr uintptr) bool {
	for _, p := range h.pointers {
		if p.addr == addr {
			return p.depth < h.depth
		}
	}
	return false
}

// format is spew's format with the '#' flag and DisableMethods.
func (h *spewHasher) format(t *spewType, v reflect.Value) {
	if h.fallback {
		return
	}
	kind := t.kind
	if kind == reflect.Pointer {
		h.formatPtr(t, v)
		return
	}
	if !h.ignoreNextType {
		h.writeString(t.paren)
	}
	h.ignoreNextType = false
	switch kind {
	case reflect.Bool:
		if v.Bool() {
			h.writeString("true")
		} else {
			h.writeString("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		h.writeBytes(strconv.AppendInt(h.num[:0], v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		h.writeBytes(strconv.AppendUint(h.num[:0], v.Uint(), 10))
	case reflect.Float32:
		h.writeBytes(strconv.AppendFloat(h.num[:0], v.Float(), 'g', -1, 32))
	case reflect.Float64:
		h.writeBytes(strconv.AppendFloat(h.num[:0], v.Float(), 'g', -1, 64))
	case reflect.Complex64:
		h.writeComplex(v.Complex(), 32)
	case reflect.Complex128:
		h.writeComplex(v.Complex(), 64)
	case reflect.Slice:
		if v.IsNil() {
			h.writeString("<nil>")
			break
		}
		fallthrough
	case reflect.Array:
		h.writeByte('[')
		h.depth++
		for i, n := 0, v.Len(); i < n; i++ {
			if i > 0 {
				h.writeByte(' ')
			}
			h.ignoreNextType = true
			h.format(h.unpack(t.elem, v.Index(i)))
		}
		h.depth--
		h.writeByte(']')
	case reflect.String:
		h.writeString(v.String())
	case reflect.Interface:
		if v.IsNil() {
			h.writeString("<nil>")
		}
	case reflect.Map:
		if v.IsNil() {
			h.writeString("<nil>")
			break
		}
		if t.key.kind != reflect.String {
			h.fallback = true // spew sorts these keys by their spew rendering
			return
		}
		h.writeString("map[")
		h.depth++
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for i, k := range keys {
			if i > 0 {
				h.writeByte(' ')
			}
			h.ignoreNextType = true
			h.format(t.key, k) // a string kind: nothing to unpack
			h.writeByte(':')
			h.ignoreNextType = true
			h.format(h.unpack(t.elem, v.MapIndex(k)))
		}
		h.depth--
		h.writeByte(']')
	case reflect.Struct:
		h.writeByte('{')
		h.depth++
		for i := range t.fields {
			f := &t.fields[i]
			if i > 0 {
				h.writeByte(' ')
			}
			h.writeString(f.label)
			h.format(h.unpack(f.t, v.Field(i)))
		}
		h.depth--
		h.writeByte('}')
	case reflect.Uintptr:
		h.writeHexPtr(uintptr(v.Uint()))
	case reflect.UnsafePointer, reflect.Chan, reflect.Func:
		h.writeHexPtr(v.Pointer())
	default:
		h.fallback = true
	}
}

func (h *spewHasher) writeComplex(c complex128, bits int) {
	h.writeByte('(')
	h.writeBytes(strconv.AppendFloat(h.num[:0], real(c), 'g', -1, bits))
	if imag(c) >= 0 {
		h.writeByte('+')
	}
	h.writeBytes(strconv.AppendFloat(h.num[:0], imag(c), 'g', -1, bits))
	h.writeString("i)")
}

// writeHexPtr is spew's printHexPtr.
func (h *spewHasher) writeHexPtr(p uintptr) {
	if p == 0 {
		h.writeString("<nil>")
		return
	}
	h.writeString("0x")
	h.writeBytes(strconv.AppendUint(h.num[:0], uint64(p), 16))
}
