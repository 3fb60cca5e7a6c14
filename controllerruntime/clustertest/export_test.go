package clustertest

import "net/http"

// SetRequestFilter makes f see every REST request of c once the bench
// has read it, before the API server serves it: a test's way to break the
// API model on purpose.
func SetRequestFilter(c *Cluster, f func(*http.Request)) { c.filter.Store(&f) }
