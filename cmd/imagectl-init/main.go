// Command imagectl-init is the image's entrypoint (PID 1).
//
// PLACEHOLDER until internal/runtime lands: it only execs its arguments.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "imagectl-init: no command given")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "imagectl-init:", err)
	os.Exit(126)
}
