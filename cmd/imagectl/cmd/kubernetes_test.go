package cmd

import (
	"github.com/google/go-containerregistry/pkg/name"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"imagectl/internal/lock"
	"imagectl/internal/verify/kubernetes"
)

// verify and release point the kubernetes runtime at a cluster with the
// same flags, the same help, into the same kubernetes runtime options.
func TestKubeFlagsShared(t *testing.T) {
	root := New()
	cmds := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		cmds[c.Name()] = c
	}
	for _, n := range []string{"kubeconfig", "context", "namespace", "storage-claim"} {
		v, r := cmds["verify"].Flags().Lookup(n), cmds["release"].Flags().Lookup(n)
		if v == nil || r == nil {
			t.Errorf("--%s: verify has it %v, release has it %v; want both", n, v != nil, r != nil)
			continue
		}
		if v.Usage != r.Usage || v.DefValue != r.DefValue {
			t.Errorf("--%s differs: verify %q (default %q), release %q (default %q)", n, v.Usage, v.DefValue, r.Usage, r.DefValue)
		}
	}

	var k kubeFlags
	c := &cobra.Command{Use: "x"}
	k.add(c)
	if err := c.Flags().Parse([]string{"--kubeconfig", "/k", "--context", "gpu", "--namespace", "ns", "--storage-claim", "pvc"}); err != nil {
		t.Fatal(err)
	}
	if k.kubeconfig != "/k" || k.context != "gpu" || k.namespace != "ns" || k.claim != "pvc" {
		t.Errorf("flags = kubeconfig %q context %q namespace %q claim %q, want /k gpu ns pvc", k.kubeconfig, k.context, k.namespace, k.claim)
	}
	if _, err := kubernetes.New(&lock.Lock{}, name.MustParseReference("localhost/demo@sha256:abababababababababababababababababababababababababababababababab").(name.Digest), k.options()...); err != nil {
		t.Errorf("kubernetes.New(the flags' options) = %v", err)
	}
}

// Every --flag an Example passes to imagectl is a flag of that command (or
// a global one): the --help examples stay runnable as flags move.
func TestExamplesUseRealFlags(t *testing.T) {
	flag := regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)
	root := New()
	examples, flags := 0, 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Example == "" {
			return
		}
		// One example command: an "imagectl ..." line and its "\" continuations,
		// up to a pipe into another program.
		var line string
		in := false
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "imagectl ") {
				in, line = true, ""
			}
			if !in || strings.HasPrefix(l, "#") {
				continue
			}
			piped := false
			if i := strings.Index(l, " | "); i >= 0 {
				l, piped = l[:i], true
			}
			line += " " + strings.TrimSuffix(l, `\`)
			if strings.HasSuffix(l, `\`) && !piped {
				continue
			}
			in = false
			// The command it runs: c itself or, in a parent's examples, a subcommand.
			run, _, err := root.Find(strings.Fields(line)[1:])
			if err != nil {
				t.Errorf("%s --help example runs no imagectl command: %v:%s", c.CommandPath(), err, line)
				continue
			}
			examples++
			for _, m := range flag.FindAllStringSubmatch(line, -1) {
				flags++
				if run.Flags().Lookup(m[1]) == nil && run.InheritedFlags().Lookup(m[1]) == nil {
					t.Errorf("%s --help example uses --%s, which %q does not have:%s", c.CommandPath(), m[1], run.CommandPath(), line)
				}
			}
		}
	}
	walk(root)
	// A parser that finds no example, or no flag in them, checks nothing
	// (73 commands with 132 flags today).
	if examples < 20 || flags < 20 {
		t.Errorf("checked %d --help example commands with %d flags, want at least 20 of each (did the parsing stop matching?)", examples, flags)
	}
}
