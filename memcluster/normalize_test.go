package memcluster

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
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
// collections, invalid UTF-8, non-canonical quantities, NaN.
//
// Half of the seeds make no value that the normalizer leaves to JSON, so
// that most objects take its fast path.
func filler(seed int64) *randfill.Filler {
	loc := time.FixedZone("X", 3600+1800)
	bad := seed%2 == 1
	pick := func(c randfill.Continue, n int) int {
		if i := c.Intn(n); bad || i != 1 {
			return i
		}
		return 0
	}
	return randfill.NewWithSeed(seed).NilChance(0.25).NumElements(0, 3).Funcs(
		func(s *string, c randfill.Continue) {
			switch pick(c, 12) {
			case 0:
				*s = ""
			case 1:
				*s = "bad\xffutf8"
			case 2:
				*s = "<html> & ünïcödé ✓"
			case 3:
				*s = c.String(8)
			default:
				*s = fmt.Sprintf("s%d", c.Intn(100))
			}
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Time{Time: randTime(c, loc, pick)} },
		func(t *metav1.MicroTime, c randfill.Continue) { *t = metav1.MicroTime{Time: randTime(c, loc, pick)} },
		func(q *resource.Quantity, c randfill.Continue) {
			vals := []string{"0", "1", "100m", "1.5Gi", "1e3", "1000m", "0.1", "2048Ki", "12345678901234567890"}
			switch pick(c, 3) {
			case 0:
				*q = resource.MustParse(vals[c.Intn(len(vals))])
			case 1:
				*q = *resource.NewMilliQuantity(c.Int63n(100000), resource.DecimalSI)
			default:
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
			}
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			*v = intstr.IntOrString{Type: intstr.Type(c.Intn(2)), IntVal: c.Int31n(10), StrVal: fmt.Sprint(c.Intn(10), "%")}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			raws := []string{"", `{`, `{"a": [1, 2]}`, `"x"`, `null`}
			if s := raws[pick(c, len(raws))]; s != "" {
				r.Raw = []byte(s)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			raws := []string{`{"f:a":{}}`, `{`, `{"f:spec": {"f:replicas": {}}}`}
			f.Raw = []byte(raws[pick(c, len(raws))])
		},
		func(f *float64, c randfill.Continue) {
			switch pick(c, 6) {
			case 1:
				*f = math.NaN()
			case 2:
				*f = math.Copysign(0, -1)
			default:
				*f = c.NormFloat64() * 1e6
			}
		},
	)
}

func randTime(c randfill.Continue, loc *time.Location, pick func(randfill.Continue, int) int) time.Time {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(c.Int63n(int64(1000 * time.Hour))))
	switch i := pick(c, 10); i {
	case 1:
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // does not parse back
	case 0:
		return time.Time{}
	case 2:
		return time.Time{}.In(loc) // zero, with a location
	case 3:
		return time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC) // before 1970
	case 4:
		return base.In(loc)
	case 5:
		return base.Truncate(time.Second).Local()
	default:
		return base
	}
}

// jsonRoundTrip is what a client of a real apiserver sees.
func jsonRoundTrip(obj any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	return out, json.Unmarshal(b, out)
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
// with the JSON round trip; it reports whether the normalizer did it.
func checkNormalize(t *testing.T, n *normalizer, newObj func() any, seed int64) bool {
	t.Helper()
	obj := newObj()
	filler(seed).Fill(obj)
	want, wantErr := jsonRoundTrip(obj)
	before, _ := json.Marshal(obj) // may fail; compared only when it does not
	got := obj
	err := n.normalize(got) // in place: obj is the test's own
	switch {
	case err != nil && wantErr != nil:
		return false
	case err != nil:
		return false // falls back to JSON: correct by construction
	case wantErr != nil:
		t.Fatalf("seed %d: the JSON round trip fails (%v), the normalizer does not", seed, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Fatalf("seed %d: normalizer and JSON round trip differ\nJSON:       %s\nnormalizer: %s\nbefore: %s\ngot  %#v\nwant %#v", seed, wb, gb, before, got, want)
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
	checkStatusUpdate(t, podKind())
	checkStatusUpdate(t, replicaSetKind())
	checkStatusUpdate(t, deploymentKind())
}

func checkStatusUpdate[T Object](t *testing.T, k Kind[T]) {
	t.Helper()
	noops := 0
	for seed := range int64(300) {
		old, in := k.New(), k.New()
		filler(2 * seed).Fill(old)
		if seed%3 == 0 {
			in = deepCopy(old) // the status, labels and annotations of old: a no-op
		} else {
			filler(2*seed + 100000).Fill(in)
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
