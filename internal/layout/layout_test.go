package layout

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/ctrlkit/ctrlkit/"

// imports returns the direct imports of every package in the root module,
// keyed by import path, as `go list` reports them.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ":")
		m[pkg] = strings.Fields(deps)
	}
	return m
}

func TestImportRules(t *testing.T) {
	all := imports(t)
	if len(all) < 8 {
		t.Fatalf("go list found %d packages; want the whole module", len(all))
	}
	rules := []struct {
		pkg       string
		forbidden []string // prefixes, relative to the module unless they contain a dot
		reason    string
	}{
		{"rollout", []string{"workqueue", "informer", "replicaset", "deployment", "memcluster", "planner", "examples", "clock", "github.com/go-logr"}, "rollout is pure maths over k8s.io/api types"},
		{"replicaset", []string{"rollout", "deployment", "memcluster", "planner", "examples"}, "replicaset imports neither rollout nor deployment"},
		{"deployment", []string{"replicaset", "memcluster", "planner", "examples"}, "deployment builds on rollout only"},
		{"workqueue", []string{"informer", "rollout", "replicaset", "deployment", "memcluster", "planner", "examples"}, "generic infrastructure knows no domain package"},
		{"informer", []string{"workqueue", "rollout", "replicaset", "deployment", "memcluster", "planner", "examples"}, "generic infrastructure knows no domain package"},
		{"memcluster", []string{"workqueue", "informer", "rollout", "replicaset", "deployment", "planner", "examples"}, "the in-memory API must not depend on the controllers it serves"},
		{"clock", []string{""}, "clock imports nothing of ours"},
		{"shard", []string{"workqueue", "rollout", "replicaset", "deployment", "memcluster", "planner", "examples"}, "shard coordinates members; it knows no controller and no server"},
	}
	for _, r := range rules {
		deps, ok := all[mod+r.pkg]
		if !ok {
			t.Errorf("package %s not found", r.pkg)
			continue
		}
		for _, d := range deps {
			for _, f := range r.forbidden {
				full := f
				if !strings.Contains(f, ".") {
					full = mod + f
				}
				if strings.HasPrefix(d, full) {
					t.Errorf("%s imports %s: %s", r.pkg, d, r.reason)
				}
			}
		}
	}
	for pkg, deps := range all {
		for _, d := range deps {
			if strings.HasPrefix(d, mod+"examples") && !strings.HasPrefix(pkg, mod+"examples") {
				t.Errorf("%s imports %s: nothing imports examples", pkg, d)
			}
		}
	}
}

func TestRootModuleHasNoClientGo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "k8s.io/client-go") || strings.HasPrefix(p, "k8s.io/kubernetes") {
			t.Errorf("the root module depends on %s; it belongs in a nested module", p)
		}
	}
}
