// Package benchmarks holds side-by-side benchmarks of ctrlkit against
// client-go. It is a separate module so that importers of ctrlkit never
// download client-go.
package benchmarks
