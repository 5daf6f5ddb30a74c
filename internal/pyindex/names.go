package pyindex

import (
	"bytes"
	"regexp"

	"imagectl/internal/pep"
)

// reqName is the project name at the start of a Requires-Dist value.
var reqName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

// normalizeNames rewrites a core metadata file so that its Name and the
// project names its Requires-Dist lines start with are in PEP 503 normal
// form; nothing else changes. pip 23.0.1 (Debian bookworm's) checks PEP 658
// metadata with `metadata Name != requirement name`, without normalizing
// either (pip 23.1 compares canonical names), so "typing_extensions"
// metadata fails a "typing-extensions" requirement. With every name in
// normal form on both sides, every pip agrees; the lock keeps normalized
// names anyway.
func normalizeNames(meta []byte) []byte {
	lines := bytes.SplitAfter(meta, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			break // the headers end at the first empty line; the body is the description
		}
		for _, key := range []string{"Name:", "Requires-Dist:"} {
			rest, ok := bytes.CutPrefix(l, []byte(key))
			if !ok {
				continue
			}
			v := bytes.TrimLeft(rest, " \t")
			if n := reqName.Find(v); n != nil {
				lines[i] = append(append([]byte(key+" "), pep.Normalize(string(n))...), v[len(n):]...)
			}
		}
	}
	return bytes.Join(lines, nil)
}
