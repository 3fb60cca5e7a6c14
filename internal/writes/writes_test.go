package writes

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeCache caches one ReplicaSet at version rv with UID uid (both ""
// when it caches none); it has no marks.
type fakeCache struct {
	rv  string
	uid types.UID
}

func (c fakeCache) Cached(context.Context, Kind, types.NamespacedName) (string, types.UID, bool) {
	return c.rv, c.uid, c.rv != "" || c.uid != ""
}
func (fakeCache) Mark(Kind, types.NamespacedName, string)                 {}
func (fakeCache) Behind(context.Context, Kind, types.NamespacedName) bool { return false }

// createPending, the rule both the packaged Deployment controller and the
// controller-runtime adapter wait by, case by case.
func TestCreatePending(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web-1"}
	rs := func(uid types.UID) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: uid}}
	}
	boom := errors.New("boom")
	tests := []struct {
		name     string
		uid      types.UID // "" : the create failed, maybe ambiguously
		cached   types.UID // "" : not cached
		live     *appsv1.ReplicaSet
		liveErr  error
		want     bool
		wantErr  error // the live read's, passed on
		ourErr   bool  // an error of CreatePending's own
		wantLive bool
	}{
		{name: "cached", uid: "a", cached: "a", want: false},
		{name: "failed create, a ReplicaSet of that name cached", uid: "", cached: "x", want: false},
		{name: "not cached, on the server", uid: "a", live: rs("a"), want: true, wantLive: true},
		{name: "an older one cached, ours on the server", uid: "a", cached: "old", live: rs("a"), want: true, wantLive: true},
		{name: "not cached, gone from the server", uid: "a", liveErr: apierrors.NewNotFound(appsv1.Resource("replicasets"), "web-1"), want: false, wantLive: true},
		{name: "another took the name", uid: "a", live: rs("b"), want: false, wantLive: true},
		{name: "failed create that happened", uid: "", live: rs("a"), want: true, wantLive: true},
		{name: "failed create that did not happen", uid: "", liveErr: apierrors.NewNotFound(appsv1.Resource("replicasets"), "web-1"), want: false, wantLive: true},
		{name: "live read fails", uid: "a", liveErr: boom, wantErr: boom, wantLive: true},
		{name: "live read returns nothing", uid: "a", ourErr: true, wantLive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var read bool
			tr := New(fakeCache{uid: tc.cached}, func(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
				read = true
				return tc.live, tc.liveErr
			})
			got, err := tr.createPending(context.Background(), write{kind: ReplicaSet, key: key, create: true, uid: tc.uid})
			switch {
			case tc.ourErr:
				if err == nil {
					t.Fatalf("CreatePending() = %v, nil; want an error", got)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("CreatePending() error = %v; want %v", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("CreatePending() error = %v", err)
			case got != tc.want:
				t.Errorf("CreatePending() = %t; want %t", got, tc.want)
			}
			if read != tc.wantLive {
				t.Errorf("live read made: %t; want %t", read, tc.wantLive)
			}
		})
	}
}

// writePending, the rule both the packaged Deployment controller and the
// controller-runtime adapter settle failed ReplicaSet writes by, case by
// case.
func TestWritePending(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web-1"}
	rs := func(rv string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", ResourceVersion: rv}}
	}
	boom := errors.New("boom")
	notFound := apierrors.NewNotFound(appsv1.Resource("replicasets"), "web-1")
	tests := []struct {
		name     string
		cached   string // "" : not cached
		live     *appsv1.ReplicaSet
		liveErr  error
		want     bool
		wantErr  bool
		wantLive bool
	}{
		{name: "the cache moved on", cached: "8", want: false},
		{name: "not cached any more", cached: "", want: false},
		{name: "the write happened", cached: "7", live: rs("9"), want: true, wantLive: true},
		{name: "it did not", cached: "7", live: rs("7"), want: false, wantLive: true},
		{name: "deleted", cached: "7", liveErr: notFound, want: false, wantLive: true},
		{name: "live read fails", cached: "7", liveErr: boom, wantErr: true, wantLive: true},
		{name: "live read returns nothing", cached: "7", wantErr: true, wantLive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var read bool
			tr := New(fakeCache{rv: tc.cached}, func(context.Context, types.NamespacedName) (*appsv1.ReplicaSet, error) {
				read = true
				return tc.live, tc.liveErr
			})
			got, err := tr.writePending(context.Background(), write{kind: ReplicaSet, key: key, failed: true, replaced: "7"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("WritePending() = %v, %v; want error %t", got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("WritePending() = %t; want %t", got, tc.want)
			}
			if read != tc.wantLive {
				t.Errorf("live read made: %t; want %t", read, tc.wantLive)
			}
		})
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false}, {notFound, false}, {apierrors.NewBadRequest("x"), false},
		{apierrors.NewConflict(appsv1.Resource("replicasets"), "web-1", boom), true},
		{apierrors.NewTooManyRequests("x", 1), true}, {apierrors.NewTimeoutError("x", 1), true}, {boom, true},
	} {
		if got := MayHaveChanged(tc.err); got != tc.want {
			t.Errorf("MayHaveChanged(%v) = %t; want %t", tc.err, got, tc.want)
		}
	}
}
