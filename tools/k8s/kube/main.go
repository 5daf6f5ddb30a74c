// Command kube is one static binary holding a Kubernetes control plane and
// kubelet, the way k3s links its components: `kube apiserver|controller-manager|
// scheduler|kubelet|etcd [FLAGS]` runs that component's own command (the same
// cobra command the upstream binary's main builds), so its flags and behaviour
// are upstream's. One link instead of five keeps the cold build short and the
// file small enough to carry to the GPU machine in one call.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	_ "time/tzdata" // CronJob time zones, as the upstream mains import it

	"github.com/spf13/cobra"
	etcdmain "go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var commands = map[string]func() *cobra.Command{
	"apiserver":          apiserver.NewAPIServerCommand,
	"controller-manager": controllermanager.NewControllerManagerCommand,
	"scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":            func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kube apiserver|controller-manager|scheduler|kubelet|etcd [flags]")
	os.Exit(2)
}

func main() {
	// The component comes from argv[0] (a link named kube-apiserver, etcd, ...)
	// or else from the first argument.
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "kube-")
	args := os.Args[1:]
	if name == "kube" || name == "" {
		if len(args) == 0 {
			usage()
		}
		name, args = strings.TrimPrefix(args[0], "kube-"), args[1:]
	}
	if name == "etcd" {
		etcdmain.Main(append([]string{"etcd"}, args...))
		return
	}
	newCmd, ok := commands[name]
	if !ok {
		usage()
	}
	cmd := newCmd()
	cmd.SetArgs(args)
	os.Exit(cli.Run(cmd))
}
