package memcluster

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// oddObject has a field for each rule of encoding/json the normalizer
// models, and some it leaves to encoding/json.
type oddObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	OddInline

	Dropped    string                       `json:"-"`
	Dash       string                       `json:"-,"`
	Zero       metav1.Time                  `json:"zero,omitzero"`
	ZeroInner  oddInner                     `json:"zeroInner,omitzero"`
	ZeroPtr    *metav1.Time                 `json:"zeroPtr,omitzero"`
	Empty      []string                     `json:"empty,omitempty"`
	Kept       []string                     `json:"kept"`
	Bytes      []byte                       `json:"bytes"`
	BytesOmit  []byte                       `json:"bytesOmit,omitempty"`
	F32        float32                      `json:"f32"`
	F64        float64                      `json:"f64,omitempty"`
	Micro      metav1.MicroTime             `json:"micro"`
	MicroPtr   *metav1.MicroTime            `json:"microPtr"`
	TimePtr    *metav1.Time                 `json:"timePtr,omitempty"`
	TimePtrPtr **metav1.Time                `json:"timePtrPtr"`
	Times      []metav1.Time                `json:"times"`
	TimePtrs   []*metav1.Time               `json:"timePtrs"`
	TimeMap    map[string]metav1.Time       `json:"timeMap"`
	TimePtrMap map[string]*metav1.Time      `json:"timePtrMap,omitempty"`
	Quantities map[string]resource.Quantity `json:"quantities"`
	Lists      map[string][]string          `json:"lists"`
	Inners     map[string]oddInner          `json:"inners"`
	Raw        runtime.RawExtension         `json:"raw"`
	Duration   metav1.Duration              `json:"duration"`
	IntOrStr   intstr.IntOrString           `json:"intOrStr"`
	IntOrStrs  []*intstr.IntOrString        `json:"intOrStrs"`
	Array      [2]string                    `json:"array"`
	Spaced     string                       `json:"with space"`
	Unsigned   uint64                       `json:",omitempty"`
	Flag       bool                         `json:"flag,omitempty"`
	Named      corev1.ResourceName          `json:"named"`
}

type OddInline struct {
	Promoted string            `json:"promoted,omitempty"`
	Labels2  map[string]string `json:"labels2"`
}

type oddInner struct {
	S string       `json:"s,omitempty"`
	T *metav1.Time `json:"t"`
}

// filler makes random objects with the values that a JSON round trip
// changes: sub-second, zero and out-of-range times, empty and nil
// collections, invalid UTF-8, non-canonical quantities, NaN. Like a
// fuzzer, it fills every exported field: a pointer, slice or map is nil
// one time in four, and a slice or map has 0 to 3 elements.
//
// Half of the seeds make no value that the normalizer leaves to JSON, so
// that most objects take its fast path. One seed in four (of both halves)
// fills the PodSpec of a pod template: every Pod seed fills the same type
// through the same normalizer code, and the spec would otherwise be most of
// the cost of a ReplicaSet or a Deployment.
type filler struct {
	r         *rand.Rand
	bad       bool // values the normalizer leaves to JSON are allowed
	templates bool // fill the PodSpec of a PodTemplateSpec
}

var fillLoc = time.FixedZone("X", 3600+1800)

func newFiller(seed int64) *filler {
	return &filler{r: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), bad: seed%2 == 1, templates: seed/2%4 == 0}
}

// Fill fills the value obj points to.
func (f *filler) Fill(obj any) { f.value(reflect.ValueOf(obj).Elem()) }

// pick returns one of n cases; case 1 is the one the normalizer leaves to
// JSON, made only by bad seeds.
func (f *filler) pick(n int) int {
	if i := f.r.IntN(n); f.bad || i != 1 {
		return i
	}
	return 0
}

func (f *filler) value(v reflect.Value) {
	switch p := v.Addr().Interface().(type) {
	case *string:
		*p = f.string()
		return
	case *metav1.Time:
		*p = metav1.Time{Time: f.time()}
		return
	case *metav1.MicroTime:
		*p = metav1.MicroTime{Time: f.time()}
		return
	case *resource.Quantity:
		*p = f.quantity()
		return
	case *intstr.IntOrString:
		*p = intstr.IntOrString{Type: intstr.Type(f.r.IntN(2)), IntVal: f.r.Int32N(10), StrVal: fmt.Sprint(f.r.IntN(10), "%")}
		return
	case *runtime.RawExtension:
		raws := []string{"", `{`, `{"a": [1, 2]}`, `"x"`, `null`}
		if s := raws[f.pick(len(raws))]; s != "" {
			p.Raw = []byte(s)
		}
		return
	case *metav1.FieldsV1:
		// Compact and plain, invalid, with white space, with what
		// json.Marshal escapes, not ASCII, null, none.
		raws := []string{`{"f:a":{}}`, `{`, `{"f:spec": {"f:replicas": {}}}`, `{"f:metadata":{"f:labels":{"f:<a&b>":{}}},"k:{\"uid\":\"u\"}":{}}`,
			`{"f:ü":{},"f:a ":{}}`, `null`, ``, `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u\"}":{}}},"f:spec":{".":{}}}`, `"x"`}
		if s := raws[f.pick(len(raws))]; s != "" {
			p.Raw = []byte(s)
		}
		return
	case *corev1.PodTemplateSpec:
		f.Fill(&p.ObjectMeta)
		if f.templates {
			f.Fill(&p.Spec)
		}
		return
	case *float64:
		switch f.pick(6) {
		case 1:
			*p = math.NaN()
		case 2:
			*p = math.Copysign(0, -1)
		default:
			*p = f.r.NormFloat64() * 1e6
		}
		return
	}
	switch t := v.Type(); t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				f.value(v.Field(i))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			f.value(v.Index(i))
		}
	case reflect.Pointer:
		if f.isNil() {
			return
		}
		e := reflect.New(t.Elem())
		f.value(e.Elem())
		v.Set(e)
	case reflect.Slice:
		if f.isNil() {
			return
		}
		n := f.r.IntN(4)
		v.Set(reflect.MakeSlice(t, n, n))
		for i := range n {
			f.value(v.Index(i))
		}
	case reflect.Map:
		if f.isNil() {
			return
		}
		n := f.r.IntN(4)
		v.Set(reflect.MakeMapWithSize(t, n))
		for range n {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			f.value(k)
			f.value(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String: // a named string type: any valid text
		v.SetString(f.text())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.r.Int64() >> f.r.IntN(64)) // SetInt truncates to the width
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(f.r.Uint64() >> f.r.IntN(64))
	case reflect.Float32:
		v.SetFloat(float64(float32(f.r.NormFloat64() * 1e3)))
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		// none in the objects under test; left zero
	}
}

func (f *filler) isNil() bool { return f.r.Float64() < 0.25 }

func (f *filler) string() string {
	switch f.pick(12) {
	case 0:
		return ""
	case 1:
		return "bad\xffutf8"
	case 2:
		return "<html> & ünïcödé ✓"
	case 3:
		return f.text()
	default:
		return fmt.Sprintf("s%d", f.r.IntN(100))
	}
}

// text is up to 8 runes of valid UTF-8: ASCII (with the characters JSON
// escapes, and U+2028), Latin-1, the rest of the BMP and beyond.
func (f *filler) text() string {
	var b []rune
	for range f.r.IntN(9) {
		switch f.r.IntN(4) {
		case 0:
			b = append(b, rune(f.r.IntN(0x80)))
		case 1:
			b = append(b, rune(0x80+f.r.IntN(0x80)))
		case 2:
			b = append(b, []rune{'"', '\\', '<', '>', '&', '\u2028', '\u2029'}[f.r.IntN(7)])
		default: // below the surrogates, or beyond the BMP
			b = append(b, []rune{rune(0x100 + f.r.IntN(0xd800-0x100)), rune(0x10000 + f.r.IntN(0x10000))}[f.r.IntN(2)])
		}
	}
	return string(b)
}

func (f *filler) quantity() resource.Quantity {
	vals := []string{"0", "1", "100m", "1.5Gi", "1e3", "1000m", "0.1", "2048Ki", "12345678901234567890"}
	switch f.pick(3) {
	case 0:
		return resource.MustParse(vals[f.r.IntN(len(vals))])
	case 1:
		return *resource.NewMilliQuantity(f.r.Int64N(100000), resource.DecimalSI)
	default:
		return *resource.NewQuantity(f.r.Int64N(1<<40), resource.BinarySI)
	}
}

func (f *filler) time() time.Time {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(f.r.Int64N(int64(1000 * time.Hour))))
	switch f.pick(10) {
	case 1:
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // does not parse back
	case 0:
		return time.Time{}
	case 2:
		return time.Time{}.In(fillLoc) // zero, with a location
	case 3:
		return time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC) // before 1970
	case 4:
		return base.In(fillLoc)
	case 5:
		return base.Truncate(time.Second).Local()
	default:
		return base
	}
}

// TestNormalizeMatchesJSON checks the normalizer against the JSON round
// trip on random objects: where it does not fall back to JSON, it must
// give exactly (reflect.DeepEqual: nil versus empty, time locations,
// quantities' internal form) what the round trip gives, and it must fall
// back wherever the round trip fails.
func TestNormalizeMatchesJSON(t *testing.T) {
	seeds := 1000
	if testing.Short() {
		seeds = 300
	}
	for _, newObj := range []func() any{
		func() any { return &corev1.Pod{} },
		func() any { return &appsv1.ReplicaSet{} },
		func() any { return &appsv1.Deployment{} },
		func() any { return &corev1.PodStatus{} },
		func() any { return &oddObject{} },
	} {
		name := reflect.TypeOf(newObj()).Elem().Name()
		t.Run(name, func(t *testing.T) {
			n := newNormalizer(newObj)
			if n == nil {
				t.Fatalf("no normalizer for %s", name)
			}
			fast := 0
			for seed := range int64(seeds) {
				if checkNormalize(t, n, newObj, seed) {
					fast++
				}
			}
			// Most objects must take the fast path, or the test compares
			// JSON with itself.
			if fast < seeds/10 {
				t.Errorf("only %d of %d random objects were normalised without JSON", fast, seeds)
			}
			t.Logf("%d of %d normalised without JSON", fast, seeds)
		})
	}
}

// FuzzNormalize is TestNormalizeMatchesJSON with seeds from the fuzzer:
// go test -fuzz FuzzNormalize ./memcluster
func FuzzNormalize(f *testing.F) {
	f.Add(int64(0), uint8(0))
	f.Add(int64(7), uint8(4))
	f.Fuzz(func(t *testing.T, seed int64, kind uint8) {
		newObj := []func() any{
			func() any { return &corev1.Pod{} },
			func() any { return &appsv1.ReplicaSet{} },
			func() any { return &appsv1.Deployment{} },
			func() any { return &corev1.PodStatus{} },
			func() any { return &oddObject{} },
		}[int(kind)%5]
		checkNormalize(t, newNormalizer(newObj), newObj, seed)
	})
}

// checkNormalize fills an object from seed and compares the normalizer
// with the JSON round trip (what a client of a real apiserver sees); it
// reports whether the normalizer did it. The object is decoded only when
// the normalizer does not fall back to JSON: where it does, it is correct
// by construction.
func checkNormalize(t *testing.T, n *normalizer, newObj func() any, seed int64) bool {
	t.Helper()
	obj := newObj()
	newFiller(seed).Fill(obj)
	before, wantErr := json.Marshal(obj)
	if err := n.normalize(obj); err != nil { // in place: obj is the test's own
		return false
	}
	want := newObj()
	if wantErr == nil {
		wantErr = json.Unmarshal(before, want)
	}
	if wantErr != nil {
		t.Fatalf("seed %d: the JSON round trip fails (%v), the normalizer does not", seed, wantErr)
	}
	if !reflect.DeepEqual(obj, want) {
		gb, _ := json.Marshal(obj)
		wb, _ := json.Marshal(want)
		t.Fatalf("seed %d: normalizer and JSON round trip differ\nJSON:       %s\nnormalizer: %s\nbefore: %s\ngot  %#v\nwant %#v", seed, wb, gb, before, obj, want)
	}
	return true
}

// TestNormalizeNoPlan: types whose round trip the normalizer cannot model
// get no normalizer, and go through JSON.
func TestNormalizeNoPlan(t *testing.T) {
	type withInterface struct{ X any }
	type withUnexported struct {
		A string
		b string
	}
	type withString struct {
		N int `json:"n,string"`
	}
	type conflict struct {
		OddInline
		Promoted string `json:"promoted"`
	}
	type embeddedPointer struct{ *oddInner }
	type intKeys struct{ M map[int]string }
	type embeddedUnexported struct{ oddInner }
	for _, obj := range []any{&embeddedUnexported{}, &withInterface{}, &withUnexported{b: "x"}, &withString{}, &conflict{}, &embeddedPointer{}, &intKeys{}} {
		if n := newNormalizer(func() any { return obj }); n != nil {
			t.Errorf("%T: got a normalizer, want none", obj)
		}
	}
	if n := newNormalizer(func() any { return &corev1.Pod{Spec: corev1.PodSpec{NodeName: "x"}} }); n != nil {
		t.Error("a New that returns a non-zero object: got a normalizer, want none")
	}
}

// TestRoundTripFallsBack: a value the normalizer does not model goes
// through JSON, with the same result and errors as before.
func TestRoundTripFallsBack(t *testing.T) {
	r := New(Config{}).pods
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "bad\xff"}}}
	got, err := r.roundTrip(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "bad\uFFFD"; got.Labels["a"] != want {
		t.Errorf("label = %q, want %q", got.Labels["a"], want)
	}
	p = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}}
	_, err1 := r.roundTrip(p)
	_, err2 := r.jsonRoundTrip(p)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("year 10000: roundTrip error %v, JSON round trip error %v; want the same error", err1, err2)
	}
	p = &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	got, _ = r.roundTrip(p)
	if got.Kind != "" || got.APIVersion != "" || p.Kind != "Pod" {
		t.Errorf("TypeMeta: got %+v, input now %+v; want it cleared in the copy only", got.TypeMeta, p.TypeMeta)
	}
}

// TestStatusUpdateMatchesHooks: the built-in kinds' status write without
// copies (statusUpdate, statusEqual) stores what CopyStatus and
// StatusMeta on a deep copy store, and finds a write a no-op exactly when
// the whole-object comparison does.
func TestStatusUpdateMatchesHooks(t *testing.T) {
	// A stored pod's status is as a status write leaves it (podIP and
	// podIPs agree).
	checkStatusUpdate(t, podKind(), func(p *corev1.Pod) { fixPodStatus(&p.Status, p.Status.QOSClass) })
	checkStatusUpdate(t, replicaSetKind(), nil)
	checkStatusUpdate(t, deploymentKind(), nil)
}

// checkStatusUpdate checks k's statusUpdate on random objects, made as
// stored by stored if it is set.
func checkStatusUpdate[T Object](t *testing.T, k Kind[T], stored func(T)) {
	t.Helper()
	noops := 0
	for seed := range int64(300) {
		old, in := k.New(), k.New()
		newFiller(2 * seed).Fill(old)
		if stored != nil {
			stored(old)
		}
		if seed%3 == 0 {
			in = deepCopy(old) // the status, labels and annotations of old: a no-op
		} else {
			newFiller(2*seed + 100000).Fill(in)
		}
		want := deepCopy(old)
		k.CopyStatus(want, in)
		k.StatusMeta(want, in)
		got := k.statusUpdate(deepCopy(old), deepCopy(in))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s seed %d: statusUpdate differs from CopyStatus+StatusMeta", k.Resource, seed)
		}
		same := k.statusEqual(old, got)
		if full := semanticallyEqual(old, deepCopy(got)); same != full {
			t.Fatalf("%s seed %d: statusEqual = %v, whole-object comparison %v", k.Resource, seed, same, full)
		}
		if same {
			noops++
		}
	}
	if noops < 100 {
		t.Errorf("%s: %d no-op writes; the test wants at least 100", k.Resource, noops)
	}
}
