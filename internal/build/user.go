package build

import (
	"fmt"

	"imagectl/internal/initconfig"
	"imagectl/internal/shell"
)

// userScript adds runtime.user to the image when the base lacks it: a group
// with the gid, a passwd entry (the login shell is bash when the base has
// it), a shadow entry with no password ("*": no password login, and not
// "!", which sshd takes for a locked account and refuses even a key), and
// the home, owned by the user. An entry of the base with the same name and
// id is kept; a base user or group holding the id under another name (the
// "ubuntu" user and group, 1000, of Ubuntu 24.04 images) is replaced, since
// the workload must see the configured name. The paths are under $IMAGECTL_ROOT
// (empty in the build) so that a test can run the script on a directory.
func userScript(u *initconfig.User) string {
	if u == nil {
		return ""
	}
	return fmt.Sprintf(`
# runtime.user: the user the init runs the workload as.
r="${IMAGECTL_ROOT:-}"
u=%s uid=%d gid=%d home=%s
drop() { # drop FILE: remove the entries named $1 or with id $2 in field $3
  f="$r/etc/$1"; [ -f "$f" ] || return 0
  awk -F: -v n="$2" -v id="$3" -v fld="$4" '!($1 == n || (fld > 0 && $fld == id))' "$f" > "$f.imagectl" && cat "$f.imagectl" > "$f" && rm -f "$f.imagectl"
}
if ! grep -q "^$u:[^:]*:$uid:$gid:" "$r/etc/passwd" 2>/dev/null; then
  old=$(awk -F: -v id="$uid" '$3 == id { print $1 }' "$r/etc/passwd" 2>/dev/null)
  drop passwd "$u" "$uid" 3
  drop shadow "$u" "" 0
  [ -n "$old" ] && drop shadow "$old" "" 0
  shell=/bin/sh; [ -x "$r/bin/bash" ] && shell=/bin/bash
  echo "$u:x:$uid:$gid::$home:$shell" >> "$r/etc/passwd"
  [ -f "$r/etc/shadow" ] && echo "$u:*:::::::" >> "$r/etc/shadow"
fi
if ! grep -q "^$u:[^:]*:$gid:" "$r/etc/group" 2>/dev/null; then
  old=$(awk -F: -v id="$gid" '$3 == id { print $1 }' "$r/etc/group" 2>/dev/null)
  drop group "$u" "$gid" 3
  echo "$u:x:$gid:" >> "$r/etc/group"
  if [ -f "$r/etc/gshadow" ]; then
    drop gshadow "$u" "" 0
    [ -n "$old" ] && drop gshadow "$old" "" 0
    echo "$u:!::" >> "$r/etc/gshadow"
  fi
fi
mkdir -p "$r$home"
chown "$uid:$gid" "$r$home"
chmod 0755 "$r$home"`, shell.Quote(u.Name), u.UID, u.GID, shell.Quote(u.HomeDir()))
}
