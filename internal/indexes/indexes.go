// Package indexes names the informer cache indexes that several packages
// of this repository add and read.
package indexes

// Orphans is the index reconcile.FromCache adds to a cache: objects
// without a controller reference, by namespace.
const Orphans = "ctrlkit.io/orphans"
