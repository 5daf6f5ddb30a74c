package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"imagectl/internal/bump"
	"imagectl/internal/exitcode"
)

func TestBumpExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    bump.Result
		want int
	}{
		{"nothing to do", bump.Result{Current: []bump.Pin{{}}}, exitcode.OK},
		{"moved", bump.Result{Changes: []bump.Change{{}}}, exitcode.PinsMoved},
		{"dry run", bump.Result{Changes: []bump.Change{{}}, DryRun: true}, exitcode.PinsMoved},
		{"stuck wins", bump.Result{Changes: []bump.Change{{}}, Stuck: []bump.Stuck{{Reason: "x"}}}, exitcode.PromotionRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitcode.Code(bumpExit(&tc.r)); got != tc.want {
				t.Errorf("bumpExit(%+v) = exit %d, want %d", tc.r, got, tc.want)
			}
		})
	}
}

func TestRepositoryArg(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "demo", "releases.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]bool{
		"registry.example/ml/demo": true, "127.0.0.1:5000/imagectl/demo": true,
		"demo": false, "images/demo/releases.json": false, filepath.Join(dir, "demo", "x"): false,
	} {
		if _, got := repositoryArg(arg); got != want {
			t.Errorf("repositoryArg(%q) = %v, want %v", arg, got, want)
		}
	}
}

// TestTrustFlagsDefaultKeys: without --key, pin and the users' commands
// find the keys in ~/.config/imagectl/keys when the working directory has
// no keys/.
func TestTrustFlagsDefaultKeys(t *testing.T) {
	home := t.TempDir()
	t.Chdir(t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("IMAGECTL_KEYS_DIR", "")
	keys := filepath.Join(home, ".config", "imagectl", "keys")
	if err := os.MkdirAll(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keys, "cosign.pub"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	var tf trustFlags
	if err := tf.resolve(); err != nil {
		t.Fatal(err)
	}
	if tf.keys[0] != filepath.Join(keys, "cosign.pub") || tf.verifierKeys[0] != filepath.Join(keys, "verifier.pub") {
		t.Errorf("resolve() = %v, %v; want the keys under %s", tf.keys, tf.verifierKeys, keys)
	}
	given := trustFlags{keys: []string{"mine.pub"}, verifierKeys: []string{"theirs.pub"}}
	if err := given.resolve(); err != nil || given.keys[0] != "mine.pub" {
		t.Errorf("resolve() with --key = %v, %v", given.keys, err)
	}
}
