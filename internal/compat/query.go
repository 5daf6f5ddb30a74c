package compat

import (
	"fmt"
	"strings"

	"imagectl/internal/version"
)

// Answer is what Query returns: the catalog rows that match, and for a
// torch release and CUDA base without a wheel of their own, the problem
// Check reports with its choices.
type Answer struct {
	// Digest identifies the catalog (see Digest).
	Digest string `json:"digest"`
	// Wheels are the matching torch wheels.
	Wheels []WheelMatch `json:"wheels"`
	// DriverFloors are the matching CUDA driver floors.
	DriverFloors []DriverFloor `json:"driver_floors"`
	// Problems are set when the asked combination has no direct wheel.
	Problems []Problem `json:"problems,omitempty"`
}

// WheelMatch is a wheel and, when a CUDA base was asked, how it runs there.
type WheelMatch struct {
	Wheel
	// Mode is "native" (the wheel's CUDA equals the base's), "minor-version
	// compatibility" (the wheel's CUDA is newer, same major) or "older
	// runtime" (older, same major). Empty when no CUDA was asked.
	Mode string `json:"mode,omitempty"`
	// MinDriver is the lowest driver for this wheel on the asked base.
	MinDriver string `json:"min_driver,omitempty"`
	// Family are torchvision and torchaudio released with this torch.
	Family []Pin `json:"family"`
}

// Query selects catalog rows: torch restricts to a release, cuda to the
// wheels that can run on a base of that CUDA version (same major) and to
// its driver floors. Empty arguments select everything.
func Query(torch, cuda string) (Answer, error) {
	ans := Answer{Digest: Digest()}
	if torch != "" {
		if _, ok := Release(torch); !ok {
			return ans, fmt.Errorf("torch %s is not in the catalog (known: %s)", torch, strings.Join(releases(), ", "))
		}
	}
	if cuda != "" {
		if _, ok := LookupDriverFloor(cuda); !ok {
			return ans, fmt.Errorf("CUDA %s is not in the catalog (known: %s)", cuda, strings.Join(cudaVersions(), ", "))
		}
	}
	for _, r := range catalog.Torch {
		if torch != "" && r.Version != torch {
			continue
		}
		for _, w := range r.Wheels {
			m := WheelMatch{Wheel: w, Family: r.Family}
			if cuda != "" {
				if w.CUDA == "" || version.Major(w.CUDA) != version.Major(cuda) {
					continue
				}
				need := cuda
				c, err := version.Compare(w.CUDA, cuda)
				if err != nil {
					return ans, fmt.Errorf("torch %s %s: %w", r.Version, w.Variant, err)
				}
				switch {
				case c == 0:
					m.Mode = "native"
				case c > 0:
					m.Mode = "minor-version compatibility"
					need = w.CUDA
				default:
					m.Mode = "older runtime"
				}
				if f, ok := LookupDriverFloor(need); ok {
					// Natively the base's toolkit needs the driver it
					// shipped with; the other modes run under minor-version
					// compatibility.
					m.MinDriver = f.MinorCompat
					if m.Mode == "native" {
						m.MinDriver = f.Native
					}
				}
			}
			ans.Wheels = append(ans.Wheels, m)
		}
	}
	for _, f := range catalog.CUDA {
		if cuda == "" || f.CUDA == cuda {
			ans.DriverFloors = append(ans.DriverFloors, f)
		}
	}
	if torch != "" && cuda != "" {
		// No driver floor was asked: the floors are in the table, and a
		// missing driver_floor is a spec's problem, not the query's.
		_, ps := Check(Request{Torch: torch, CUDA: cuda})
		for _, p := range ps {
			if p.Field != "driver_floor" {
				ans.Problems = append(ans.Problems, p)
			}
		}
	}
	return ans, nil
}
