package rollout

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestTemplateHashMemo checks that the memo of NewReplicaSet answers as
// ComputeHash does on random templates, also after the same object was
// changed in place (its template or its collision count) between calls.
func TestTemplateHashMemo(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		r := rand.New(rand.NewPCG(20261127, uint64(i)))
		f := &templateFiller{r: r, ptrs: map[reflect.Type][]reflect.Value{}}
		d := &appsv1.Deployment{}
		f.fill(reflect.ValueOf(&d.Spec.Template).Elem())
		if len(d.Spec.Template.Spec.Containers) == 0 {
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
		}
		for step := range 6 {
			want := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
			shallow := *d // shares the containers: answered from the memo
			for _, obj := range []*appsv1.Deployment{d, d, &shallow} {
				if got := templateHash(obj); got != want {
					t.Fatalf("case %d step %d: templateHash = %q; want %q", i, step, got, want)
				}
			}
			switch r.IntN(4) {
			case 0: // another value somewhere in the template
				f.fill(reflect.ValueOf(&d.Spec.Template).Elem())
				if len(d.Spec.Template.Spec.Containers) == 0 {
					d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
				}
			case 3: // a container changed in place: same array, same key
				d.Spec.Template.Spec.Containers[0].Image += "x"
			case 1:
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "more"})
			case 2: // the collision count, in place or not
				c := int32(r.IntN(3))
				if d.Status.CollisionCount != nil && r.IntN(2) == 0 {
					*d.Status.CollisionCount = c + 1 // in place
				} else {
					d.Status.CollisionCount = &c
				}
			}
		}
	}
}

// TestTemplateHashMemoForgets checks that the memo keeps no Deployment
// alive: the entry of a collected object goes.
func TestTemplateHashMemoForgets(t *testing.T) {
	d := &appsv1.Deployment{}
	d.Spec.Template.Labels = map[string]string{"app": "forget-me"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:1"}}
	want := ComputeHash(&d.Spec.Template, nil)
	if got := templateHash(d); got != want {
		t.Fatalf("templateHash = %q; want %q", got, want)
	}
	key := memoKeyOf(d)
	d = nil
	// Wait for the event, however long the collector takes to run the
	// cleanup (the test's deadline bounds it).
	for memoHas(key) {
		runtime.GC()
		runtime.Gosched()
	}
}

func BenchmarkTemplateHash(b *testing.B) {
	d := &appsv1.Deployment{}
	d.Spec.Template = *catsTemplate(b, 1)
	b.Run("ComputeHash", func(b *testing.B) {
		for b.Loop() {
			ComputeHash(&d.Spec.Template, nil)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		for b.Loop() {
			templateHash(d)
		}
	})
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
