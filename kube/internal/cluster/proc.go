package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proc is what /proc says about one process: CPU time used so far (user +
// system, all threads), and resident set size now and at its peak.
type Proc struct {
	CPU          time.Duration
	RSS, PeakRSS int64 // bytes
}

// ReadProc reads /proc/PID/stat and /proc/PID/status (Linux only).
func ReadProc(pid int) (Proc, error) {
	var p Proc
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count from the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return p, fmt.Errorf("cluster: /proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return p, fmt.Errorf("cluster: /proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return p, fmt.Errorf("cluster: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	p.CPU = time.Duration(ticks) * time.Second / time.Duration(clockTicks())

	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	defer st.Close()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), "kB")), 10, 64)
		if err != nil {
			return p, fmt.Errorf("cluster: /proc/%d/status: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			p.RSS = kb << 10
		} else {
			p.PeakRSS = kb << 10
		}
	}
	return p, sc.Err()
}

// ResetPeakRSS sets the process's peak RSS (VmHWM) back to its current RSS
// (Linux ≥ 4.0; the process must be ours), so that the next ReadProc gives
// the peak since now.
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

var clockTicks = sync.OnceValue(func() int64 {
	// USER_HZ, the unit of /proc's CPU times: 100 on every Linux
	// architecture Go supports; getconf confirms it where available.
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || n <= 0 {
		return 100
	}
	return n
})
