package plugin

import (
	"os"
)

// Why on a Deployment rolling 4 replicas to an image that does not exist:
// the controller's own check (old pods cannot go: 3 available is the
// minimum), the cause behind it with the pods named, and the way out.
func ExampleWhy() {
	st := stuckImage().state()
	r := Why(st, now, Thresholds{})
	if err := Write(os.Stdout, Text, r); err != nil {
		panic(err)
	}
	// Output:
	// deployment/web in shop: STUCK
	//   revision 2 (replica set web-599c5695cc); 4 replicas: 2 updated, 3 ready, 3 available; the controller keeps ≥ 3 available and ≤ 5 pods
	//
	// What the controller is waiting for (its own checks):
	//   SurgeLimit: new replica set web-599c5695cc cannot scale up: 5 pods ≥ 4 + 1 surge
	//   MinAvailableLimit: old replica sets cannot scale down: 3 available ≤ 3 minimum because 2 new pods are unavailable (2 failing to pull the image)
	//   DeadlinePending: progress deadline in 9m0s
	//
	// Why:
	//   ! ImagePullBackOff: 2 pods cannot pull image "nginx:nope"
	//       pod/web-599c5695cc-0, pod/web-599c5695cc-1
	//       ImagePullBackOff: Back-off pulling image "nginx:nope"
	//
	// To unblock:
	//   - fix the image reference (or the registry credentials, imagePullSecrets) in the pod template
	//   - or roll back to the previous revision: kubectl rollout undo deployment/web
}
