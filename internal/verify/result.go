package verify

import (
	"encoding/json"
)

// DigestRunner is a Runtime that starts the image by its digest.
type DigestRunner interface {
	// RanDigest is the digest the runtime started ("" when it started
	// none, or something that is not a digest).
	RanDigest() string
}

// PodRunner is a Runtime that ran the probes in a Kubernetes pod.
type PodRunner interface {
	// RanPod is the pod the probes ran in (nil before it ran).
	RanPod() *PodRun
}

// proof returns what ties the probes that ran through rt, whose env probe
// printed e, to digest.
func proof(rt Runtime, e envOut, digest string) string {
	if digest == "" {
		return ""
	}
	if dr, ok := rt.(DigestRunner); ok && dr.RanDigest() == digest {
		return ProofRuntime
	}
	if _, ok := rt.(*Recorded); ok {
		// A log copied back by hand: the fingerprint in it names what the
		// Job's environment said (IMAGECTL_IMAGE_DIGEST), which proves
		// nothing about what the kubelet ran.
		return ""
	}
	if fingerprintDigest(e) == digest {
		return ProofFingerprint
	}
	return ""
}

// fingerprintDigest is the image_digest of the init's fingerprint the env
// probe read, or "".
func fingerprintDigest(e envOut) string {
	if !e.Fingerprint.Present || e.Fingerprint.Error != "" {
		return ""
	}
	var fp struct {
		ImageDigest string `json:"image_digest"`
	}
	if json.Unmarshal(e.Fingerprint.Content, &fp) != nil {
		return ""
	}
	return fp.ImageDigest
}
