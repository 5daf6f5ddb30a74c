// Package runtime is the image's init (PID 1): it waits for storage, tunes
// swappiness and /dev/shm, puts TMPDIR and the compile caches on persistent
// storage, checks the driver floor, writes an environment fingerprint and then
// runs the user's command, forwarding signals and reaping zombies.
//
// It imports the standard library and golang.org/x/sys only (see
// depcheck_test.go): the binary must start on any base image.
package runtime

import "imagectl/internal/initconfig"

// ConfigPath is where the build bakes the runtime config into the image.
const ConfigPath = initconfig.Path

// The runtime config is the contract between the build and the init; its
// types live in internal/initconfig, which the build side imports too. The
// aliases let the init's code name them as its own.
type (
	Config     = initconfig.Config
	Storage    = initconfig.Storage
	Caches     = initconfig.Caches
	ImageFacts = initconfig.ImageFacts
	Duration   = initconfig.Duration
	User       = initconfig.User
	SSH        = initconfig.SSH
	Jupyter    = initconfig.Jupyter
)
