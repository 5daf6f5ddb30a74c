package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

// The runtime step adds the user on a base without it, replaces a base
// user and group that hold the ids under another name (Ubuntu 24.04's
// ubuntu, 1000), keeps an entry that is already right, and gives the
// home to the user. The script runs on a directory standing in for the
// image's root.
func TestUserScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the home")
	}
	u := &initconfig.User{Name: "jovyan", UID: 1000, GID: 1000, Home: "/home/jovyan"}
	for _, tc := range []struct {
		name                  string
		passwd, shadow, group string
		wantPasswd, wantGroup string
		wantShadow            string
	}{
		{
			name:       "debian base",
			passwd:     "root:x:0:0:root:/root:/bin/bash\n",
			shadow:     "root:*:19000:0:99999:7:::\n",
			group:      "root:x:0:\n",
			wantPasswd: "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:1000::/home/jovyan:/bin/sh\n",
			wantShadow: "root:*:19000:0:99999:7:::\njovyan:*:::::::\n",
			wantGroup:  "root:x:0:\njovyan:x:1000:\n",
		},
		{
			name:       "ubuntu 24.04 base",
			passwd:     "root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n",
			shadow:     "root:*:19000:0:99999:7:::\nubuntu:!:19000:0:99999:7:::\n",
			group:      "root:x:0:\nubuntu:x:1000:\n",
			wantPasswd: "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:1000::/home/jovyan:/bin/sh\n",
			wantShadow: "root:*:19000:0:99999:7:::\njovyan:*:::::::\n",
			wantGroup:  "root:x:0:\njovyan:x:1000:\n",
		},
		{
			name:       "already there",
			passwd:     "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:1000:Jo:/home/jovyan:/bin/bash\n",
			shadow:     "jovyan:*:19000:0:99999:7:::\n",
			group:      "jovyan:x:1000:\n",
			wantPasswd: "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:1000:Jo:/home/jovyan:/bin/bash\n",
			wantShadow: "jovyan:*:19000:0:99999:7:::\n",
			wantGroup:  "jovyan:x:1000:\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"passwd": tc.passwd, "shadow": tc.shadow, "group": tc.group} {
				if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("sh", "-euc", userScript(u))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "IMAGECTL_ROOT=" + root}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("user script: %v: %s", err, out)
			}
			for name, want := range map[string]string{"passwd": tc.wantPasswd, "shadow": tc.wantShadow, "group": tc.wantGroup} {
				b, _ := os.ReadFile(filepath.Join(root, "etc", name))
				if string(b) != want {
					t.Errorf("/etc/%s:\n%s\nwant:\n%s", name, b, want)
				}
			}
			fi, err := os.Stat(filepath.Join(root, "home/jovyan"))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 || fi.Mode().Perm() != 0o755 {
				t.Errorf("home: %d:%d %v, want 1000:1000 0755", st.Uid, st.Gid, fi.Mode().Perm())
			}
		})
	}
	if s := runtimeStepScript(&lock.Lock{}); strings.Contains(s, "runtime.user") {
		t.Errorf("runtime step without a user adds one:\n%s", s)
	}
	l := &lock.Lock{}
	l.Runtime.User = u
	if s := runtimeStepScript(l); !strings.Contains(s, "u='jovyan' uid=1000 gid=1000 home='/home/jovyan'") {
		t.Errorf("runtime step with a user lacks it:\n%s", s)
	}
}
