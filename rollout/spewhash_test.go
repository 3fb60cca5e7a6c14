package rollout

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/dump"
)

// spewFNV is what upstream hashes: FNV-32a over dump.ForHash(v).
func spewFNV(v any) uint32 {
	h := fnv.New32a()
	h.Write([]byte(dump.ForHash(v)))
	return h.Sum32()
}

// TestSpewHashMatchesSpew checks templateSum against FNV-32a over go-spew's
// output on random pod templates: every field filled or left zero at
// random, pointers nil or not, some pointers shared between two places
// (spew prints the second one "<shown>" when the first is above it on the
// path), quantities with and without their cached string or in inf.Dec
// form, times in UTC, Local, a fixed zone and with a monotonic reading.
func TestSpewHashMatchesSpew(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	shown := 0
	for i := range n {
		f := &templateFiller{r: rand.New(rand.NewPCG(20260522, uint64(i))), ptrs: map[reflect.Type][]reflect.Value{}}
		var tpl corev1.PodTemplateSpec
		f.fill(reflect.ValueOf(&tpl).Elem())
		want := spewFNV(tpl)
		got, ok := spewSum(podTemplateSpewType(), reflect.ValueOf(&tpl).Elem())
		if !ok || got != want {
			t.Fatalf("case %d: spewSum = %d, %v; want %d from:\n%s", i, got, ok, want, dump.ForHash(tpl))
		}
		if templateSum(&tpl) != want {
			t.Fatalf("case %d: templateSum differs from spewSum", i)
		}
		if strings.Contains(dump.ForHash(tpl), "<shown>") {
			shown++
		}
	}
	t.Logf("%d templates, %d with a pointer spew printed <shown>", n, shown)
	if shown == 0 {
		t.Error("no template exercised spew's cycle check")
	}
}

// templateFiller fills values at random, reusing earlier pointers of the
// same type now and then.
type templateFiller struct {
	r     *rand.Rand
	ptrs  map[reflect.Type][]reflect.Value
	depth int
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	quantityType = reflect.TypeFor[resource.Quantity]()
)

func (f *templateFiller) str() string {
	return []string{"", "a", "web", "app", "k8s.io/name", "x y", "ü", "(v1.Pod)", "<nil>", "map[", "z"}[f.r.IntN(11)]
}

func (f *templateFiller) fill(v reflect.Value) {
	r := f.r
	switch v.Type() {
	case timeType:
		var tm time.Time
		switch r.IntN(6) {
		case 1:
			tm = time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()
		case 2:
			tm = time.Unix(r.Int64N(4e9), 0).Local()
		case 3:
			tm = time.Unix(r.Int64N(4e9), 0).In(time.FixedZone("X", 3600))
		case 4:
			tm = time.Now()
		}
		v.Set(reflect.ValueOf(tm))
		return
	case quantityType:
		q := resource.MustParse([]string{"0", "100m", "1Gi", "1.5", "12345678901234567890", "1e3", "-2Ki", "0.000000001"}[r.IntN(8)])
		switch r.IntN(3) {
		case 1:
			_ = q.String() // caches the string
		case 2:
			q.AsDec()
		}
		v.Set(reflect.ValueOf(q))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if r.IntN(3) == 0 || f.depth > 8 {
			return
		}
		if olds := f.ptrs[v.Type()]; len(olds) > 0 && r.IntN(3) == 0 {
			v.Set(olds[r.IntN(len(olds))])
			return
		}
		p := reflect.New(v.Type().Elem())
		f.depth++
		f.fill(p.Elem())
		f.depth--
		f.ptrs[v.Type()] = append(f.ptrs[v.Type()], p)
		v.Set(p)
	case reflect.Slice:
		n := r.IntN(4) - 1
		if n < 0 || f.depth > 8 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		f.depth++
		for i := range n {
			f.fill(v.Index(i))
		}
		f.depth--
	case reflect.Map:
		n := r.IntN(5) - 1
		if n < 0 || f.depth > 8 {
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		f.depth++
		for range n {
			k := reflect.New(v.Type().Key()).Elem()
			f.fill(k)
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(e)
			v.SetMapIndex(k, e)
		}
		f.depth--
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() && r.IntN(3) > 0 {
				f.fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt([]int64{0, 1, -1, 42, math.MaxInt32, math.MinInt64}[r.IntN(6)])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint([]uint64{0, 1, 255, math.MaxUint64}[r.IntN(4)])
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1.5, -1e-7, math.Inf(1)}[r.IntN(4)])
	}
}

type spewNode struct {
	Next *spewNode
	V    int
}

type spewKey string

type spewTree struct{ Kids []*spewTree }

// spewQuirks has a field of every kind spew formats, in orders that
// exercise its quirks.
type spewQuirks struct {
	Ptrs   []*int
	After  string
	M      map[string]*int
	After2 int
	PP     **int
	PI     *any
	I      any
	Arr    [2]int8
	F32    float32
	F64    float64
	C64    complex64
	C128   complex128
	U      uintptr
	Fn     func()
	Ch     chan int
	UP     unsafe.Pointer
	Named  map[spewKey]string
	Bytes  []byte
	Node   *spewNode
	Shared *int
	Deep   struct{ In struct{ P *int } }
	Empty  *struct{}
	Empty2 *struct{}
	IntMap map[int]string
	PPs    []**int
	Tree   *spewTree
	unexp  *int
}

func TestSpewHashQuirks(t *testing.T) {
	one, two := 1, 2
	pone := &one
	var nilInt *int
	var nilAny any
	loop := &spewNode{V: 1}
	loop.Next = loop
	a, b := &spewNode{V: 1}, &spewNode{V: 2}
	a.Next, b.Next = b, a
	tree := &spewTree{}
	tree.Kids = []*spewTree{tree, nil}
	cases := map[string]spewQuirks{
		"zero":                        {},
		"slice ending in nil pointer": {Ptrs: []*int{&one, nil}, After: "x"},
		"slice of nil pointers":       {Ptrs: []*int{nil, nil}, After: "x", After2: 3},
		"map with nil last value":     {M: map[string]*int{"a": &one, "b": nil}, After2: 3},
		"pointer to pointer":          {PP: &pone},
		"pointer to nil pointer":      {PP: &nilInt},
		"pointer to nil interface":    {PI: &nilAny},
		"numbers": {Arr: [2]int8{-1, 127}, F32: 1.1, F64: -2.5e-300, C64: complex(1, -2), C128: complex(math.Inf(-1), 0.5),
			U: 0xdead, Bytes: []byte{0, 1, 255}},
		"funcs and channels":                {Fn: func() {}, Ch: make(chan int), UP: unsafe.Pointer(&two)},
		"named string keys":                 {Named: map[spewKey]string{"b": "2", "a": "1", "": "0"}},
		"self loop":                         {Node: loop},
		"two-node loop":                     {Node: a},
		"aliased pointer":                   {Shared: &one, Deep: struct{ In struct{ P *int } }{struct{ P *int }{&one}}},
		"aliased, same depth":               {PP: &pone, Shared: pone},
		"zero-size pointers":                {Empty: new(struct{}), Empty2: new(struct{})},
		"unexported pointer":                {unexp: &two, Shared: &two},
		"element pointing at a nil pointer": {PPs: []**int{&nilInt, &pone}},
		"element closing a loop":            {Tree: tree},
		"empty collections":                 {Ptrs: []*int{}, M: map[string]*int{}, Named: map[spewKey]string{}, Bytes: []byte{}},
	}
	for name, q := range cases {
		got, ok := spewSum(spewTypes(reflect.TypeOf(q), map[reflect.Type]*spewType{}), reflect.ValueOf(q))
		if want := spewFNV(q); !ok || got != want {
			t.Errorf("%s: spewSum = %d, %v; want %d from:\n%s", name, got, ok, want, dump.ForHash(q))
		}
	}
	// What the port leaves to spew.
	for name, q := range map[string]spewQuirks{
		"interface holding a value": {I: 5},
		"pointer to an interface":   {PI: &[]any{5}[0]},
		"non-string map keys":       {IntMap: map[int]string{1: "a"}},
	} {
		if _, ok := spewSum(spewTypes(reflect.TypeOf(q), map[reflect.Type]*spewType{}), reflect.ValueOf(q)); ok {
			t.Errorf("%s: spewSum claims to cover it", name)
		}
	}
}
