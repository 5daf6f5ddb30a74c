// Command pause is the local Kubernetes cluster's sandbox ("pause")
// process, as registry.k8s.io/pause does it: PID 1 of each pod's sandbox,
// it holds the pod's namespaces, reaps the zombies reparented to it, and
// exits 0 on SIGINT or SIGTERM. hack/k8s.sh builds it static and packs it
// as the image containerd's CRI plugin uses for sandboxes (nothing can be
// pulled from a public registry here).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
