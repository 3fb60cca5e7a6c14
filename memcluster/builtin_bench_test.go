//go:build unix

package memcluster

import (
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkNewCluster measures a new cluster serving its first request,
// with the kinds of New only, of addCoreKinds, and of AddBuiltinKinds:
// what a test bench pays at start. cpu-ns/op is the process's CPU time
// per cluster, which a loaded machine does not inflate as it does the
// wall time.
func BenchmarkNewCluster(b *testing.B) {
	for _, bc := range []struct {
		name string
		add  func(*Cluster)
	}{{"New", func(*Cluster) {}}, {"addCoreKinds", addCoreKinds}, {"AddBuiltinKinds", AddBuiltinKinds}} {
		b.Run(bc.name, func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				c := New(Config{})
				bc.add(c)
				h := NewHandler(c)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis", nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
