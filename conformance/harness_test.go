package conformance

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Environment knobs. The defaults keep `go test -short -race ./...` within
// the CI budget; CTRLKIT_CONFORMANCE_LONG=1 runs at least 100,000 cases per
// function.
const (
	envLong = "CTRLKIT_CONFORMANCE_LONG"
	envSeed = "CTRLKIT_CONFORMANCE_SEED"
	envCase = "CTRLKIT_CONFORMANCE_CASE"
	envN    = "CTRLKIT_CONFORMANCE_N"
)

// caseCount is how many random cases a differential test runs. weight
// scales the count down for comparisons that are expensive per case
// (weight 1 is the full count, 10 a tenth).
func caseCount(t testing.TB, weight int) int {
	if weight < 1 {
		weight = 1
	}
	n := 20_000
	switch {
	case os.Getenv(envN) != "":
		v, err := strconv.Atoi(os.Getenv(envN))
		if err != nil {
			t.Fatalf("%s=%q: %v", envN, os.Getenv(envN), err)
		}
		n = v
	case os.Getenv(envLong) == "1":
		// The long mode promises 100k cases per function whatever its weight.
		return 100_000
	case testing.Short():
		n = 2_000
	}
	return max(1, n/weight)
}

// baseSeed is the seed of a run: CTRLKIT_CONFORMANCE_SEED if set, else a
// fixed default so that CI is deterministic.
func baseSeed(t testing.TB) uint64 {
	s := os.Getenv(envSeed)
	if s == "" {
		return 20260522
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", envSeed, s, err)
	}
	return v
}

// onlyCase returns the single case index to run (CTRLKIT_CONFORMANCE_CASE),
// or -1.
func onlyCase(t testing.TB) int {
	s := os.Getenv(envCase)
	if s == "" {
		return -1
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", envCase, s, err)
	}
	return v
}

// rngFor is the generator of case i: every case has its own stream, so a
// failure can be replayed alone with CTRLKIT_CONFORMANCE_SEED and
// CTRLKIT_CONFORMANCE_CASE.
func rngFor(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(i)*0x9E3779B97F4A7C15+1))
}

// verdict is the outcome of one case.
type verdict struct {
	// known names a documented deviation (see FINDINGS.md) when the case
	// differs for a known, accepted reason; "" means the results agree.
	known string
	// diff, when non-empty, is an unexplained disagreement.
	diff string
}

func agree() verdict                  { return verdict{} }
func knownDeviation(k string) verdict { return verdict{known: k} }
func disagree(format string, args ...any) verdict {
	return verdict{diff: fmt.Sprintf(format, args...)}
}

// report collects the agreement counts printed by every differential test
// and, at the end of the run, by TestMain.
var report = struct {
	sync.Mutex
	lines map[string]string
}{lines: map[string]string{}}

// differential runs n random cases of one comparison. gen builds the input
// of case i from its own generator and describes it; check compares ours
// with upstream's on it. Each unexplained disagreement fails the test with
// the replay command and the input; documented deviations are counted.
func differential[In any](t *testing.T, weight int, gen func(r *rand.Rand) In, describe func(In) string, check func(In) verdict) {
	t.Helper()
	differentialN(t, caseCount(t, weight), gen, describe, check)
}

// differentialN is differential with an explicit case count.
func differentialN[In any](t *testing.T, n int, gen func(r *rand.Rand) In, describe func(In) string, check func(In) verdict) {
	t.Helper()
	seed := baseSeed(t)
	only := onlyCase(t)
	var agreed, failed int
	known := map[string]int{}
	run := 0
	for i := range n {
		if only >= 0 && i != only {
			continue
		}
		run++
		in := gen(rngFor(seed, i))
		v := check(in)
		switch {
		case v.diff != "":
			failed++
			if failed <= 3 {
				t.Errorf("case %d disagrees (replay: %s=%d %s=%d go test -run '^%s$'):\n%s\ninput:\n%s",
					i, envSeed, seed, envCase, i, t.Name(), v.diff, describe(in))
			}
		case v.known != "":
			known[v.known]++
		default:
			agreed++
		}
	}
	var ks []string
	for k, c := range known {
		ks = append(ks, fmt.Sprintf("%s: %d", k, c))
	}
	sort.Strings(ks)
	line := fmt.Sprintf("%d/%d agreed", agreed, run)
	if len(ks) > 0 {
		line += fmt.Sprintf(", %d known deviations (%s)", run-agreed-failed, strings.Join(ks, "; "))
	}
	if failed > 0 {
		line += fmt.Sprintf(", %d DISAGREED", failed)
	}
	t.Logf("seed %d: %s", seed, line)
	report.Lock()
	report.lines[t.Name()] = line
	report.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if len(report.lines) > 0 && (testing.Verbose() || os.Getenv(envLong) == "1") {
		names := make([]string, 0, len(report.lines))
		for k := range report.lines {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Println("conformance agreement:")
		for _, k := range names {
			fmt.Printf("  %-60s %s\n", k, report.lines[k])
		}
	}
	os.Exit(code)
}

// must returns v, and panics on an error: the inputs the generators build
// are valid, so an error is a bug in ours (the case reports the panic).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
