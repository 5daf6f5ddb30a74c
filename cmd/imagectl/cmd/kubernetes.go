package cmd

import (
	"github.com/spf13/cobra"

	"imagectl/internal/verify/kubernetes"
)

// kubeFlags point the kubernetes runtime at a cluster: the same flags, with
// the same help, on verify (one Job) and release (one Job per image).
type kubeFlags struct {
	kubeconfig, context, namespace, claim string
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	fl.StringVar(&k.context, "context", "", "kubernetes: kubeconfig context (default its current context)")
	fl.StringVar(&k.namespace, "namespace", "", "kubernetes: namespace of the verification Jobs and their ConfigMaps (default the context's, else default)")
	fl.StringVar(&k.claim, "storage-claim", "", "kubernetes: PersistentVolumeClaim mounted at the lock's runtime.storage.path (default: an emptyDir)")
}

// options are the kubernetes runtime's options the flags set.
func (k *kubeFlags) options() []kubernetes.Option {
	return []kubernetes.Option{kubernetes.WithKubeconfig(k.kubeconfig), kubernetes.WithContext(k.context),
		kubernetes.WithNamespace(k.namespace), kubernetes.WithStorageClaim(k.claim)}
}
