package memcluster

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A normalizer gives what a JSON round trip (json.Marshal, then
// json.Unmarshal into a new object) gives, without encoding anything: every
// object the cluster stores goes through one, as it would through a real
// apiserver's wire, and encoding dominated the cost of a large simulation.
//
// It works in place on a private deep copy, guided by a plan made once per
// type from the same rules encoding/json follows:
//
//   - metav1.Time loses its sub-second part and comes back in time.Local,
//     metav1.MicroTime keeps microseconds; a zero one comes back as
//     time.Time{}, and a pointer to a zero one as nil (it encodes as null);
//   - an empty slice or map in an omitempty field becomes nil, an empty one
//     elsewhere stays empty, a nil one stays nil; likewise the other empty
//     values of omitempty fields and the zero ones of omitzero fields;
//   - fields tagged json:"-" become zero;
//   - any other type with its own JSON or text encoding (resource.Quantity,
//     intstr.IntOrString, RawExtension, …) makes the round trip through
//     encoding/json on its own;
//   - integers, booleans and finite floats come back unchanged, and so do
//     strings that are valid UTF-8.
//
// What it cannot do exactly falls back to the real round trip: a type it
// has no plan for (interfaces, unexported fields, ambiguous embedded
// fields, …, decided once per type) and a value that encoding would change
// in a way it does not model (invalid UTF-8, NaN, a time outside years
// 0–9999). TestNormalizeMatchesJSON compares the two on random objects.
type normalizer struct {
	typ  reflect.Type // the pointer type it normalises
	root *normNode    // of typ.Elem()
}

type normKind uint8

const (
	normSkip      normKind = iota // booleans and integers: unchanged
	normString                    // unchanged if valid UTF-8
	normFloat                     // unchanged if finite
	normTime                      // metav1.Time
	normMicroTime                 // metav1.MicroTime
	normLeaf                      // its own encoding: round trip through encoding/json
	normPointer
	normSlice
	normArray
	normMap
	normStruct
)

type normNode struct {
	kind   normKind
	typ    reflect.Type
	elem   *normNode   // pointer, slice, array and map values
	fields []normField // struct
	// stringMap: a map[string]string, checked without reflection.
	stringMap bool
	// ownJSON: a leaf of a type E, or *E, where E is no pointer and *E
	// has both MarshalJSON and UnmarshalJSON (see walkOwnJSON).
	ownJSON bool
}

type normField struct {
	index     int
	node      *normNode
	drop      bool // json:"-"
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool // for omitZero
}

// errSlowPath says the value needs the real round trip.
var errSlowPath = errors.New("memcluster: value needs a JSON round trip")

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	jsonUnmarsh   = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarsh   = reflect.TypeFor[encoding.TextUnmarshaler]()
	isZeroer      = reflect.TypeFor[interface{ IsZero() bool }]()
)

// newNormalizer returns the normalizer of the objects that newObj makes,
// or nil if it has no plan for them or newObj does not make a zero-valued
// object (a round trip decodes into a new one, and keeps what it does not
// overwrite).
func newNormalizer(newObj func() any) *normalizer {
	obj := reflect.ValueOf(newObj())
	if obj.Kind() != reflect.Pointer || obj.IsNil() || !obj.Elem().IsZero() {
		return nil
	}
	if n, ok := normalizers.Load(obj.Type()); ok {
		return n.(*normalizer)
	}
	p := planner{nodes: map[reflect.Type]*normNode{}}
	var n *normalizer
	if root, err := p.plan(obj.Type().Elem()); err == nil {
		n = &normalizer{typ: obj.Type(), root: root}
	}
	normalizers.Store(obj.Type(), n)
	return n
}

// normalizers holds the normalizer (or nil) of each pointer type: a plan
// depends on the type only and is never modified, so clusters share them
// (planning the types of the built-in kinds dominated a cluster's start).
var normalizers sync.Map

// accepts reports whether obj is a non-nil pointer of n's type; a nil n
// accepts nothing.
func (n *normalizer) accepts(obj any) bool {
	if n == nil || reflect.TypeOf(obj) != n.typ {
		return false
	}
	return !reflect.ValueOf(obj).IsNil()
}

// normalize does the round trip on obj, a pointer of the normalizer's type
// that the caller owns and nothing else refers to. After an error obj is
// in an unknown state.
func (n *normalizer) normalize(obj any) error {
	v := reflect.ValueOf(obj)
	if v.Type() != n.typ || v.IsNil() {
		return errSlowPath
	}
	_, err := n.root.walk(v.Elem())
	return err
}

type planner struct {
	nodes map[reflect.Type]*normNode // done or under way (recursive types)
}

var errNoPlan = errors.New("memcluster: no normalisation plan")

func (p *planner) plan(t reflect.Type) (*normNode, error) {
	if n, ok := p.nodes[t]; ok {
		return n, nil
	}
	n := &normNode{typ: t}
	p.nodes[t] = n
	switch {
	case t == timeType:
		n.kind = normTime
		return n, nil
	case t == microTimeType:
		n.kind = normMicroTime
		return n, nil
	case encodesItself(t):
		n.kind = normLeaf
		e := t
		if t.Kind() == reflect.Pointer {
			e = t.Elem()
		}
		pe := reflect.PointerTo(e)
		n.ownJSON = e.Kind() != reflect.Pointer && pe.Implements(jsonMarshaler) && pe.Implements(jsonUnmarsh)
		return n, nil
	}
	var err error
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.kind = normSkip
	case reflect.String:
		n.kind = normString
	case reflect.Float32, reflect.Float64:
		n.kind = normFloat
	case reflect.Pointer:
		n.kind = normPointer
		n.elem, err = p.plan(t.Elem())
	case reflect.Slice:
		n.kind = normSlice
		n.elem, err = p.plan(t.Elem())
	case reflect.Array:
		n.kind = normArray
		n.elem, err = p.plan(t.Elem())
	case reflect.Map:
		// Keys must be plain strings; map values are not addressable when
		// encoded, so a value type whose encoding needs its address is
		// encoded differently there: no plan for either.
		if k := t.Key(); k.Kind() != reflect.String || encodesItself(k) || needsAddress(t.Elem(), map[reflect.Type]bool{}) {
			return nil, errNoPlan
		}
		n.kind = normMap
		n.stringMap = t == reflect.TypeFor[map[string]string]()
		n.elem, err = p.plan(t.Elem())
	case reflect.Struct:
		n.kind = normStruct
		err = p.planStruct(n, t)
	default: // interfaces, channels, functions, complex numbers, uintptr
		return nil, errNoPlan
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// planStruct plans the fields of a struct. Embedded structs are planned as
// nested ones (their fields are promoted, as encoding/json does); any JSON
// name that occurs twice in the promoted set, where encoding/json's
// dominance rules would apply, leaves the type without a plan.
func (p *planner) planStruct(n *normNode, t reflect.Type) error {
	names := map[string]bool{}
	var collect func(t reflect.Type) error
	collect = func(t reflect.Type) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if !validJSONName(name) {
				return errNoPlan
			}
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				if encodesItself(sf.Type) {
					// encoding/json inlines its fields, but the walk
					// would encode it as a whole.
					return errNoPlan
				}
				if err := collect(sf.Type); err != nil {
					return err
				}
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if names[name] {
				return errNoPlan
			}
			names[name] = true
		}
		return nil
	}
	if err := collect(t); err != nil {
		return err
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		_, opts, _ := strings.Cut(tag, ",")
		if !sf.IsExported() {
			// encoding/json leaves it zero, and reflection cannot.
			return errNoPlan
		}
		f := normField{index: i}
		if tag == "-" {
			f.drop = true
			n.fields = append(n.fields, f)
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Pointer {
			return errNoPlan // allocated on decoding only if a field is present
		}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
				f.isZero = zeroTest(sf.Type)
			case "string":
				return errNoPlan
			}
		}
		node, err := p.plan(sf.Type)
		if err != nil {
			return err
		}
		f.node = node
		n.fields = append(n.fields, f)
	}
	return nil
}

// encodesItself reports whether encoding/json calls methods of t (or *t).
func encodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{jsonMarshaler, jsonUnmarsh, textMarshaler, textUnmarsh} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

// needsAddress reports whether a value of t, or a part of it that is not
// behind a pointer, encodes with a method on a pointer receiver: it is
// then encoded without the method where it is not addressable, as in a
// map.
func needsAddress(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if encodesItself(t) {
		pt := reflect.PointerTo(t)
		return !t.Implements(jsonMarshaler) && !t.Implements(textMarshaler) &&
			(pt.Implements(jsonMarshaler) || pt.Implements(textMarshaler))
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if needsAddress(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Array:
		return needsAddress(t.Elem(), seen)
	}
	return false
}

// zeroTest is encoding/json's omitzero test for t.
func zeroTest(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Implements(isZeroer):
		return func(v reflect.Value) bool {
			if t.Kind() == reflect.Pointer && v.IsNil() {
				return true
			}
			return v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case reflect.PointerTo(t).Implements(isZeroer):
		return func(v reflect.Value) bool { return v.Addr().Interface().(interface{ IsZero() bool }).IsZero() }
	}
	return reflect.Value.IsZero
}

// validJSONName is encoding/json's test of a tag's name; a name it rejects
// makes it use the Go name.
func validJSONName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c > utf8.RuneSelf):
			return false
		}
	}
	return true
}

// walk normalises v (addressable) in place and reports whether it encodes
// as null: a pointer to such a value decodes as nil.
func (n *normNode) walk(v reflect.Value) (null bool, err error) {
	switch n.kind {
	case normSkip:
	case normString:
		if !utf8.ValidString(v.String()) {
			return false, errSlowPath
		}
	case normFloat:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return false, errSlowPath
		}
	case normTime:
		t := (*metav1.Time)(v.Addr().UnsafePointer())
		return normalizeTime(&t.Time, time.Second)
	case normMicroTime:
		t := (*metav1.MicroTime)(v.Addr().UnsafePointer())
		return normalizeTime(&t.Time, time.Microsecond)
	case normLeaf:
		if n.ownJSON {
			if done, null, err := n.walkOwnJSON(v); done {
				return null, err
			}
		}
		b, err := json.Marshal(v.Addr().Interface())
		if err != nil {
			return false, errSlowPath
		}
		out := reflect.New(n.typ)
		if err := json.Unmarshal(b, out.Interface()); err != nil {
			return false, errSlowPath
		}
		v.Set(out.Elem())
		return string(b) == "null", nil
	case normPointer:
		if v.IsNil() {
			return true, nil
		}
		null, err := n.elem.walk(v.Elem())
		if err != nil {
			return false, err
		}
		if null {
			v.SetZero()
		}
	case normSlice:
		if v.IsNil() {
			return true, nil
		}
		if n.elem.kind != normSkip {
			for i := range v.Len() {
				if _, err := n.elem.walk(v.Index(i)); err != nil {
					return false, err
				}
			}
		}
	case normArray:
		if n.elem.kind != normSkip {
			for i := range v.Len() {
				if _, err := n.elem.walk(v.Index(i)); err != nil {
					return false, err
				}
			}
		}
	case normMap:
		if v.IsNil() {
			return true, nil
		}
		return false, n.walkMap(v)
	case normStruct:
		for i := range n.fields {
			f := &n.fields[i]
			fv := v.Field(f.index)
			switch {
			case f.drop, f.omitEmpty && emptyValue(fv), f.omitZero && f.isZero(fv):
				fv.SetZero()
			default:
				if _, err := f.node.walk(fv); err != nil {
					return false, err
				}
			}
		}
	}
	return false, nil
}

// walkOwnJSON is the round trip of a leaf with its own JSON methods,
// calling them directly: json.Marshal calls MarshalJSON and compacts
// what it returns (validating it, removing white space, escaping <, >, &
// and U+2028/U+2029), and json.Unmarshal validates that again and hands
// it whole to UnmarshalJSON. Where the encoding is valid JSON of printable
// ASCII without white space, <, > or &, compacting leaves it as it is, and
// the methods' result is the round trip's. done is false where it is not
// (or it encodes as null): the caller does the round trip through
// encoding/json. A nil *E encodes as null and decodes as nil. This was
// most of the normaliser's cost (managedFields' FieldsV1, a nil
// deletionTimestamp, resource quantities).
func (n *normNode) walkOwnJSON(v reflect.Value) (done, null bool, err error) {
	ptr, e := v.Addr(), n.typ
	if n.typ.Kind() == reflect.Pointer {
		if v.IsNil() {
			return true, true, nil
		}
		ptr, e = v, n.typ.Elem()
	}
	b, err := ptr.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return true, false, errSlowPath
	}
	if !plainJSON(b) || !json.Valid(b) {
		return false, false, nil
	}
	out := reflect.New(e)
	// A copy: b may be the value's own bytes (FieldsV1's, RawExtension's),
	// where json.Marshal would have handed over a new buffer.
	if err := out.Interface().(json.Unmarshaler).UnmarshalJSON(bytes.Clone(b)); err != nil {
		return true, false, errSlowPath
	}
	if n.typ.Kind() == reflect.Pointer {
		v.Set(out)
	} else {
		v.Set(out.Elem())
	}
	return true, false, nil
}

// plainJSON reports whether b, not null, has only printable ASCII but
// white space and the characters json.Marshal escapes.
func plainJSON(b []byte) bool {
	if len(b) == 0 || string(b) == "null" {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func (n *normNode) walkMap(v reflect.Value) error {
	if n.stringMap {
		for k, s := range v.Interface().(map[string]string) {
			if !utf8.ValidString(k) || !utf8.ValidString(s) {
				return errSlowPath
			}
		}
		return nil
	}
	key := reflect.New(n.typ.Key()).Elem()
	val := reflect.New(n.typ.Elem()).Elem()
	for it := v.MapRange(); it.Next(); {
		key.SetIterKey(it)
		if !utf8.ValidString(key.String()) {
			return errSlowPath
		}
		if n.elem.kind == normSkip {
			continue
		}
		val.SetIterValue(it)
		if n.elem.kind == normString {
			if !utf8.ValidString(val.String()) {
				return errSlowPath
			}
			continue
		}
		if _, err := n.elem.walk(val); err != nil {
			return err
		}
		v.SetMapIndex(key, val)
	}
	return nil
}

// normalizeTime truncates *t to unit and moves it to time.Local, as
// metav1.Time and MicroTime encode and decode it; a zero one becomes
// time.Time{}, which encodes as null.
func normalizeTime(t *time.Time, unit time.Duration) (null bool, err error) {
	if t.IsZero() {
		*t = time.Time{}
		return true, nil
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return false, errSlowPath // does not parse back
	}
	ns := int64(t.Nanosecond())
	*t = time.Unix(t.Unix(), ns-ns%int64(unit))
	return false, nil
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
