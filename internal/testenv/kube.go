package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// DocNamespace is the namespace the YAML of docs/kubernetes names;
// ApplyDoc puts its objects in the test's namespace instead.
const DocNamespace = "imagectl-verify"

// VerifyLabel selects what a Kubernetes verification creates: its Job,
// the Job's pod and the probes' ConfigMap.
const VerifyLabel = "app.kubernetes.io/name=imagectl-verify"

// Kube is the local cluster `make up K8S=1` started (hack/k8s.sh) as its
// admin, and a namespace of the test's own, deleted after the test.
type Kube struct {
	Config    *rest.Config
	Client    kubernetes.Interface
	Namespace string
	// Kubeconfig is the admin's kubeconfig file (IMAGECTL_KUBECONFIG).
	Kubeconfig string
}

// GetKube returns the local cluster with a fresh namespace whose default
// ServiceAccount exists (pods are admitted from then on). Without
// IMAGECTL_KUBECONFIG it skips the test, saying why, or fails it under
// K8S=1 (make test's default: the cluster must be there).
func GetKube(t testing.TB) Kube {
	t.Helper()
	kc := os.Getenv("IMAGECTL_KUBECONFIG")
	if kc == "" {
		if os.Getenv("K8S") == "1" {
			t.Fatal("K8S=1 but IMAGECTL_KUBECONFIG is not set: hack/k8s.sh writes it into .cache/env")
		}
		t.Skip("IMAGECTL_KUBECONFIG is not set: make up K8S=1 (or the whole make test) starts a local Kubernetes")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("imagectl-e2e-%d", time.Now().UnixNano()%1e9)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount: %v", ns, err)
	}
	return Kube{Config: cfg, Client: cs, Namespace: ns, Kubeconfig: kc}
}

// DocYAML is the path of docs/kubernetes/NAME, the YAML the docs give.
func DocYAML(name string) string { return filepath.Join(Root(), "docs", "kubernetes", name) }

// ApplyDoc creates the objects of docs/kubernetes/NAME, DocNamespace
// replaced by the test's namespace, exactly as written otherwise (strict
// decoding: a field the API does not know fails the test). Cluster-scoped
// bindings are deleted after the test; the ClusterRole is shared by every
// run.
func (k Kube) ApplyDoc(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(DocYAML(name))
	if err != nil {
		t.Fatal(err)
	}
	cs := k.Client
	for _, doc := range strings.Split(strings.ReplaceAll(string(b), DocNamespace, k.Namespace), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("docs/kubernetes/%s: %v", name, err)
		}
		var err error
		switch meta.Kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = cs.CoreV1().ServiceAccounts(k.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "Role":
			var o rbacv1.Role
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = cs.RbacV1().Roles(k.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "RoleBinding":
			var o rbacv1.RoleBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = cs.RbacV1().RoleBindings(k.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "ClusterRole":
			var o rbacv1.ClusterRole
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				if _, err = cs.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
					err = nil // shared by every run
				}
			}
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
				t.Cleanup(func() {
					_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
				})
			}
		case "PersistentVolumeClaim":
			var o corev1.PersistentVolumeClaim
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = cs.CoreV1().PersistentVolumeClaims(k.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			}
		default:
			t.Fatalf("docs/kubernetes/%s: unexpected kind %q", name, meta.Kind)
		}
		if err != nil {
			t.Fatalf("creating the %s of docs/kubernetes/%s: %v", meta.Kind, name, err)
		}
	}
}

// Leftovers lists what verifications left in the namespace: Jobs, pods
// and ConfigMaps with VerifyLabel.
func (k Kube) Leftovers(t testing.TB) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: VerifyLabel}
	var out []string
	jobs, err := k.Client.BatchV1().Jobs(k.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		out = append(out, "job/"+j.Name)
	}
	pods, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	cms, err := k.Client.CoreV1().ConfigMaps(k.Namespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		out = append(out, "configmap/"+c.Name)
	}
	return out
}

// TokenConfig is the client configuration of ServiceAccount sa in the
// namespace: the cluster's address and CA, a token of sa.
func (k Kube) TokenConfig(t testing.TB, sa string) *rest.Config {
	t.Helper()
	tok, err := k.Client.CoreV1().ServiceAccounts(k.Namespace).CreateToken(context.Background(), sa, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := k.Config
	return &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAFile, CAData: cfg.CAData}, BearerToken: tok.Status.Token}
}

// LimitedConfig is the client configuration of a ServiceAccount allowed
// to apply and delete ConfigMaps in the namespace and nothing else: a
// verification with it is refused "patch jobs".
func (k Kube) LimitedConfig(t testing.TB) *rest.Config {
	t.Helper()
	ctx := context.Background()
	cs, ns := k.Client, k.Namespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "limited"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch", "delete"},
	}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "limited"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver's RBAC authorizer learns of a new binding from its
	// informers, a moment after the create returned: until it allows the
	// ConfigMap, a verification is refused "patch configmaps", not the
	// "patch jobs" the tests expect.
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa.Name,
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "configmaps"},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the RoleBinding %s/%s is not in force after 30s: %s", ns, rb.Name, got.Status.Reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return k.TokenConfig(t, sa.Name)
}

// WriteKubeconfig writes cfg (a token configuration: TokenConfig,
// LimitedConfig) as a kubeconfig file whose context's namespace is the
// test's, for imagectl's --kubeconfig, and returns its path.
func (k Kube) WriteKubeconfig(t testing.TB, cfg *rest.Config, name string) string {
	t.Helper()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: k.Namespace}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
