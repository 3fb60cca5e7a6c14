package crd

// CPUTime is cpuTime, for the external tests.
var CPUTime = cpuTime
