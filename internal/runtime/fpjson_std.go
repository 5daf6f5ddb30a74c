//go:build imagectl_stdjson

package runtime

import "encoding/json"

// marshalFingerprint through encoding/json: built with -tags
// imagectl_stdjson by hack/bench/init.sh, to measure the start-up cost
// against the hand-written encoder in the same run.
func marshalFingerprint(fp Fingerprint) []byte {
	b, err := json.MarshalIndent(fp, "", "  ")
	if err != nil {
		panic(err) // a Fingerprint has no type encoding/json cannot encode
	}
	return b
}
