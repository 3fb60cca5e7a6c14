package clustertest

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/ctrlkit/ctrlkit/memcluster"
)

// shared is what the benches of one [Explore] share instead of building
// it each: what every bench would build alike, and never changes once
// built. A bench of [Test] has its own.
type shared struct {
	// builtinTypes are client-go's schemas of the built-in kinds, for
	// server-side apply and managedFields: parsed at the first use, in
	// tens of milliseconds.
	builtinTypes managedfields.TypeConverter
	// stacks are buffers for runtime.Stack (see goroutines), a megabyte
	// each, free for the next dump: one per bench that dumps at once. (A
	// sync.Pool loses them at every other garbage collection, and the
	// megabyte allocated again was 4% of the bytes a seed allocated.)
	stacksMu sync.Mutex
	stacks   []*[]byte
}

func newShared() *shared {
	return &shared{builtinTypes: memcluster.LazyTypeConverter(func() managedfields.TypeConverter {
		return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	})}
}

// stackBuffer returns a buffer for a stack dump, and a function that
// gives it back once the dump is parsed (it keeps no reference to it).
func (s *shared) stackBuffer() (*[]byte, func()) {
	s.stacksMu.Lock()
	defer s.stacksMu.Unlock()
	var b *[]byte
	if n := len(s.stacks); n > 0 {
		b, s.stacks = s.stacks[n-1], s.stacks[:n-1]
	} else {
		buf := make([]byte, 1<<20)
		b = &buf
	}
	return b, func() {
		s.stacksMu.Lock()
		s.stacks = append(s.stacks, b)
		s.stacksMu.Unlock()
	}
}
