package envtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// endChildren sends SIGTERM to every process whose parent is this test
// binary (a real control plane a suite started in the bubble, which would
// outlive the binary the watchdog is about to end) and returns their ids.
func endChildren() []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := os.Getpid()
	var ended []int
	for _, stat := range stats {
		if pid, ppid, ok := parentOf(stat); ok && ppid == self && syscall.Kill(pid, syscall.SIGTERM) == nil {
			ended = append(ended, pid)
		}
	}
	return ended
}

// parentOf reads a /proc/<pid>/stat file: "pid (comm) state ppid …",
// where comm may hold spaces and parentheses.
func parentOf(stat string) (pid, ppid int, ok bool) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	head, rest, found := strings.Cut(s, " (")
	i := strings.LastIndex(rest, ") ")
	if !found || i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(rest[i+2:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(head)
	ppid, err2 := strconv.Atoi(fields[1])
	return pid, ppid, err1 == nil && err2 == nil
}
