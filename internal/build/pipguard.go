package build

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"imagectl/internal/lock"
)

// ConstraintPath is the pip constraints file an image with a venv carries,
// exported as PIP_CONSTRAINT (the path NGC's images use since 25.03): every
// wheel of the locked closure pinned with ==, so that `pip install` of
// anything that would change a locked version fails with pip's own
// resolution error, while a package that leaves them alone still
// installs. `PIP_CONSTRAINT= pip install ...` (empty) opts one command
// out; docs/build.md, "A pip that cannot move the lock".
const ConstraintPath = "/etc/pip/constraint.txt"

// Constraints returns the constraints file of l's wheel closure, one
// "name==version" line per wheel in name order (the lock's versions,
// local labels included: "torch==2.6.0+cu124"), under a header naming the
// image and the lock. The resolver (pip itself) is not pinned: upgrading
// pip moves nothing the image was verified with. nil when l has no pip.
func Constraints(l *lock.Lock) []byte {
	if len(l.Pip) == 0 {
		return nil
	}
	lines := make([]string, 0, len(l.Pip))
	for _, w := range l.Pip {
		lines = append(lines, w.Name+"=="+w.Version)
	}
	slices.Sort(lines)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# pip constraints of image %s: the locked wheel closure (lock %s).\n", l.Name, l.Digest)
	b.WriteString("# pip refuses to change any of these; PIP_CONSTRAINT= pip install ... opts one command out.\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteByte('\n')
	return b.Bytes()
}
