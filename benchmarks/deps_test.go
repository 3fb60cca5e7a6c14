package benchmarks

import (
	_ "github.com/ctrlkit/ctrlkit/clock"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/util/workqueue"
)
