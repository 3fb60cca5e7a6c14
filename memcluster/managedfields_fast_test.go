package memcluster

// Every test of the package computes managedFields both ways: the cheap
// road of managedfields_fast.go panics where it differs from the field
// manager's.
func init() { checkManagedFields = true }
