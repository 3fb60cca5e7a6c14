package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// failures is the value of the --fail flag: what goes wrong, and how
// often. It implements flag.Value.
type failures struct {
	// badImage and crashLoop are the fractions of the update's pods that
	// never pull their image, or crash in a loop.
	badImage, crashLoop float64
	// api is the probability that a write of a controller fails with a
	// 500 (half of them after the write took effect, as when a response
	// is lost).
	api float64
}

// String renders the flag's value as Set accepts it.
func (f *failures) String() string {
	var parts []string
	for _, p := range []struct {
		name string
		v    float64
	}{{"bad-image", f.badImage}, {"crash-loop", f.crashLoop}, {"api", f.api}} {
		if p.v > 0 {
			parts = append(parts, p.name+"="+strconv.FormatFloat(p.v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// Set parses a comma-separated list of name=fraction.
func (f *failures) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%q: want name=fraction", part)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || v < 0 || v > 1 {
			return fmt.Errorf("%q: the fraction must be a number in [0, 1]", part)
		}
		switch name {
		case "bad-image":
			f.badImage = v
		case "crash-loop":
			f.crashLoop = v
		case "api":
			f.api = v
		default:
			return fmt.Errorf("%q: unknown failure %q (want bad-image, crash-loop or api)", part, name)
		}
	}
	if f.badImage+f.crashLoop > 1 {
		return fmt.Errorf("bad-image and crash-loop add up to more than 1")
	}
	return nil
}

// podModel is how the simulated kubelet runs pods: every pod starts a
// second after it is scheduled and is Ready readyAfter later; it stops two
// seconds after it is deleted. Pods of image broken fail as f says.
func podModel(readyAfter time.Duration, broken string, f failures) memcluster.PodModel {
	base := memcluster.PodBehavior{StartDelay: time.Second, ReadyDelay: readyAfter, ShutdownDelay: 2 * time.Second}
	return func(pod *corev1.Pod, rnd *rand.Rand) memcluster.PodBehavior {
		b := base
		if len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Image != broken || f.badImage+f.crashLoop == 0 {
			return b
		}
		switch r := rnd.Float64(); {
		case r < f.badImage:
			b.Failure = memcluster.PodBadImage
		case r < f.badImage+f.crashLoop:
			b.Failure = memcluster.PodCrashLoop
		}
		return b
	}
}

// apiFaults turns the api rate into fault rules for the writes of the
// controllers. Reads and watches are left alone so that the timeline is
// about the controllers, not the informers.
func apiFaults(rate float64) memcluster.Faults {
	if rate == 0 {
		return memcluster.Faults{}
	}
	var f memcluster.Faults
	for _, v := range []string{"create", "update", "update/status", "patch", "delete"} {
		f.Rules = append(f.Rules,
			memcluster.FaultRule{Verb: v, Rate: rate / 2, Reason: metav1.StatusReasonInternalError},
			memcluster.FaultRule{Verb: v, Rate: rate / 2, Reason: metav1.StatusReasonInternalError, AfterWrite: true})
	}
	return f
}
