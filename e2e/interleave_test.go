package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctrlkit/ctrlkit/clock"
	"github.com/ctrlkit/ctrlkit/internal/gate"
)

// modeKind is how a world runs the work of one virtual instant.
type modeKind uint8

const (
	// fromEnv: as the environment says (the zero worldConfig.Mode).
	fromEnv modeKind = iota
	// serial: one unit at a time, oldest first (clock.NewDeterministic).
	serial
	// interleaved: one unit at a time, in an order drawn from a seed
	// (clock.NewInterleaved), recorded.
	interleaved
	// replayed: one unit at a time, in a recorded order (clock.NewReplay).
	replayed
	// parallel: every unit at once, on goroutines (clock.NewFake): any
	// interleaving the machine makes, none recorded.
	parallel
)

// clockMode is how a world runs the work of an instant; the zero value
// reads it from the environment (modeFromEnv).
type clockMode struct {
	kind modeKind
	// seed draws an interleaving; seeded false takes the world's seed.
	seed   uint64
	seeded bool
	// schedule is what a replay replays, read from file (or given inline
	// when file is "").
	schedule clock.Schedule
	file     string
}

// The environment variables of the clock modes.
const (
	envConcurrent = "CTRLKIT_E2E_CONCURRENT"
	envInterleave = "CTRLKIT_E2E_INTERLEAVE"
	envSchedule   = "CTRLKIT_E2E_SCHEDULE"
)

// modeFromEnv reads the clock mode from the environment:
//
//   - CTRLKIT_E2E_SCHEDULE=<schedule> or =@<file> replays a recorded
//     interleaving (what a failing interleaved run wrote);
//   - CTRLKIT_E2E_INTERLEAVE=<n> interleaves with the draws of seed n
//     instead of the world's own seed;
//   - CTRLKIT_E2E_CONCURRENT=1 interleaves with the world's seed (the
//     same seed, the same interleaving); =parallel runs the work of an
//     instant at once, on goroutines (any interleaving the machine makes,
//     not replayable); unset or 0 runs it oldest first.
func modeFromEnv(getenv func(string) string) (clockMode, error) {
	if s := getenv(envSchedule); s != "" {
		m := clockMode{kind: replayed}
		text := s
		if f, ok := strings.CutPrefix(s, "@"); ok {
			b, err := os.ReadFile(f)
			if err != nil {
				return clockMode{}, fmt.Errorf("%s=%s: %w", envSchedule, s, err)
			}
			text, m.file = string(b), f
		}
		sched, err := clock.ParseSchedule(text)
		if err != nil {
			return clockMode{}, fmt.Errorf("%s=%s: %w", envSchedule, s, err)
		}
		m.schedule = sched
		return m, nil
	}
	if s := getenv(envInterleave); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return clockMode{}, fmt.Errorf("%s=%q: %w", envInterleave, s, err)
		}
		return clockMode{kind: interleaved, seed: n, seeded: true}, nil
	}
	switch s := getenv(envConcurrent); s {
	case "", "0":
		return clockMode{kind: serial}, nil
	case "1":
		return clockMode{kind: interleaved}, nil
	case "parallel":
		return clockMode{kind: parallel}, nil
	default:
		return clockMode{}, fmt.Errorf("%s=%q: want 0, 1 or parallel", envConcurrent, s)
	}
}

// newClock returns the clock of a world of seed in mode m (not fromEnv).
func (m clockMode) newClock(seed uint64, start time.Time) *clock.Fake {
	switch m.kind {
	case interleaved:
		if !m.seeded {
			m.seed = seed
		}
		return clock.NewInterleaved(start, clock.Interleaving{Seed: m.seed})
	case replayed:
		return clock.NewReplay(start, m.schedule)
	case parallel:
		return clock.NewFake(start)
	}
	return clock.NewDeterministic(start)
}

// env is the part of a replay line that selects m: the environment
// variables, each followed by a space.
func (m clockMode) env() string {
	switch m.kind {
	case interleaved:
		if m.seeded {
			return fmt.Sprintf("%s=%d ", envInterleave, m.seed)
		}
		return envConcurrent + "=1 "
	case replayed:
		if m.file != "" {
			return fmt.Sprintf("%s=@%s ", envSchedule, m.file)
		}
		return fmt.Sprintf("%s=%s ", envSchedule, m.schedule)
	case parallel:
		return envConcurrent + "=parallel "
	}
	return ""
}

// replayNote is what a failed world logs, last: the line that runs it
// again, and, for an interleaved one, where the interleaving it took is
// recorded (written to a file of the temporary directory: a schedule of a
// long run has thousands of turns).
func (w *world) replayNote(seedEnv bool) string {
	var b strings.Builder
	b.WriteString("replay with: ")
	if seedEnv {
		fmt.Fprintf(&b, "CTRLKIT_E2E_SEED=%d ", w.seed)
	}
	fmt.Fprintf(&b, "%sgo test -run '^%s$' ./e2e", w.mode.env(), strings.ReplaceAll(w.tb.Name(), "/", "$/^"))
	switch w.mode.kind {
	case parallel:
		b.WriteString("\n(the order of the work of each instant was the machine's, and is not recorded: the run may not fail again; " +
			envConcurrent + "=1 interleaves it in an order that replays)")
	case interleaved:
		s := w.fc.Schedule()
		f, err := os.CreateTemp(w.scheduleDir, "ctrlkit-e2e-*.schedule")
		if err == nil {
			_, err = f.WriteString(s.String() + "\n")
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			fmt.Fprintf(&b, "\n(the interleaving it took could not be written: %v)", err)
			break
		}
		fmt.Fprintf(&b, "\nthe interleaving it took (%d turns, %d of them out of order) is in %s; with %s=@%s in place of %s the run replays from that record",
			w.fc.Turns(), len(s), f.Name(), envSchedule, f.Name(), strings.TrimSpace(w.mode.env()))
	}
	return b.String()
}

// yieldGate is the cluster's gate in an interleaved world: every request
// of the controllers, informers and kubelet first gives up its turn
// (clock.Yield), so that the interleaving may serve another goroutine's
// request, or deliver a watch event, between two requests of one sync, as
// an API server serving concurrent clients would. The test's own
// requests (their context is marked outside) are made between instants,
// outside the simulation, and pass at once.
type yieldGate struct {
	fc   *clock.Fake
	next gate.Gate // a test's own gate, asked first; nil: none
}

// outside marks the context of the test's own requests.
type outside struct{}

func (g yieldGate) Enter(ctx context.Context, s gate.Step) error {
	if g.next != nil {
		if err := g.next.Enter(ctx, s); err != nil {
			return err
		}
	}
	if s.Kind != gate.StepRequest || ctx.Value(outside{}) != nil {
		return nil
	}
	return clock.Yield(ctx, g.fc)
}

func TestModeFromEnv(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.schedule")
	if err := os.WriteFile(file, []byte("3:1,9:2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env     map[string]string
		want    clockMode
		wantEnv string
		err     string
	}{
		{env: nil, want: clockMode{kind: serial}, wantEnv: ""},
		{env: map[string]string{envConcurrent: "0"}, want: clockMode{kind: serial}, wantEnv: ""},
		{env: map[string]string{envConcurrent: "1"}, want: clockMode{kind: interleaved}, wantEnv: "CTRLKIT_E2E_CONCURRENT=1 "},
		{env: map[string]string{envConcurrent: "parallel"}, want: clockMode{kind: parallel}, wantEnv: "CTRLKIT_E2E_CONCURRENT=parallel "},
		{env: map[string]string{envConcurrent: "yes"}, err: `want 0, 1 or parallel`},
		{env: map[string]string{envInterleave: "42", envConcurrent: "1"}, want: clockMode{kind: interleaved, seed: 42, seeded: true},
			wantEnv: "CTRLKIT_E2E_INTERLEAVE=42 "},
		{env: map[string]string{envInterleave: "x"}, err: `CTRLKIT_E2E_INTERLEAVE="x"`},
		{env: map[string]string{envSchedule: "3:1,9:2"}, want: clockMode{kind: replayed, schedule: clock.Schedule{{Step: 3, Index: 1}, {Step: 9, Index: 2}}},
			wantEnv: "CTRLKIT_E2E_SCHEDULE=3:1,9:2 "},
		{env: map[string]string{envSchedule: "@" + file, envConcurrent: "1"}, want: clockMode{kind: replayed, file: file,
			schedule: clock.Schedule{{Step: 3, Index: 1}, {Step: 9, Index: 2}}}, wantEnv: "CTRLKIT_E2E_SCHEDULE=@" + file + " "},
		{env: map[string]string{envSchedule: "@" + filepath.Join(dir, "missing")}, err: "no such file"},
		{env: map[string]string{envSchedule: "3:0"}, err: `index "0"`},
	} {
		got, err := modeFromEnv(func(k string) string { return tc.env[k] })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("modeFromEnv(%v) error = %v; want one containing %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("modeFromEnv(%v) = %v", tc.env, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(clockMode{})); diff != "" {
			t.Errorf("modeFromEnv(%v) mismatch (-want +got):\n%s", tc.env, diff)
		}
		if env := got.env(); env != tc.wantEnv {
			t.Errorf("modeFromEnv(%v).env() = %q; want %q", tc.env, env, tc.wantEnv)
		}
	}
}
