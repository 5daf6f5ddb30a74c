// Package build turns a lock into an image: BuildKit LLB that fetches every
// artifact by its locked URL and sha256 and installs it with the network off,
// in the order of the lock's layer plan (layerplan.Of) (State, Definition),
// and a solve against buildkitd that pushes the image by digest and/or
// writes an OCI layout (Solve).
//
// State and Definition are pure: they read only the lock and the options, so
// their output can be marshalled and inspected without a daemon.
package build
