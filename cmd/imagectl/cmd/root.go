// Package cmd holds imagectl's cobra commands: one file per verb, each a thin
// layer that parses flags and calls one library function.
package cmd

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
)

// New returns the imagectl root command.
func New() *cobra.Command {
	var verbose bool
	var af accessFlags
	root := &cobra.Command{
		Use:   "imagectl",
		Short: "Lock, build, sign, verify and promote PyTorch/CUDA images",
		Long: `imagectl ships locked PyTorch/CUDA images: HCL specs are checked against a
compatibility catalog, resolved to a hash-pinned lock, built with BuildKit,
signed with cosign, verified on real GPUs and promoted by digest.

Exit codes: 0 ok, 1 spec/lock/other error, 2 usage, 3 lock stale, 4 verification
failed, 5 promotion refused by a gate, 6 lock tampered, 7 verification could not
run, 8 driver below the floor (init), 69 service unavailable, 75 storage never
became ready (init), 77 a registry or index refused the credentials, 130
interrupted.

Registry credentials come from the Docker config ($DOCKER_CONFIG/config.json or
~/.docker/config.json, credential helpers included), index credentials from
--netrc; private CAs are added with --ca-file.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			// Required flags are checked here, before cobra does it after
			// this hook with an error that would bypass the usage exit code.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return exitcode.Wrap(exitcode.Usage, err)
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return exitcode.Wrap(exitcode.Usage, err)
			}
			ctx := logs.With(cmd.Context(), log)
			if needsAccess(cmd) {
				a, err := af.access(log)
				if err != nil {
					return err
				}
				ctx = withAccess(ctx, a)
			}
			cmd.SetContext(ctx)
			return nil
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug detail to stderr")
	af.add(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitcode.Wrap(exitcode.Usage, err)
	})
	root.AddCommand(
		offline(newLintCmd()),
		offline(newPrintCmd()),
		offline(newCompatCmd()),
		newMirrorCmd(),
		newLockCmd(),
		newBuildCmd(),
		newSignCmd(),
		newVerifyCmd(),
		newScanCmd(),
		newPromoteCmd(),
		newPinCmd(),
		newPolicyCmd(),
		newReleasesCmd(),
		newDiffCmd(),
		newBumpCmd(),
		newCatalogCmd(),
		newReleaseCmd(),
		offline(newFingerprintCmd()),
		offline(newMonitoringCmd()),
		newDoctorCmd(),
		offline(newVersionCmd()),
	)
	root.InitDefaultCompletionCmd()
	groupUsage(root)
	root.SetOut(os.Stdout)
	root.SetErr(os.Stderr)
	return root
}

// groupUsage makes each command that only groups subcommands (the root,
// completion, policy, ...) refuse an unknown subcommand as a usage error
// (cobra exits 1 for the root, or prints help and exits 0 below it), and
// print its help when called without one.
func groupUsage(c *cobra.Command) {
	for _, sub := range c.Commands() {
		groupUsage(sub)
	}
	if c.Runnable() || !c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
		}
		return exitcode.Wrap(exitcode.Usage, errors.New(msg))
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// usageArgs wraps a cobra positional-args validator so that its error maps
// to the usage exit code.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return exitcode.Wrap(exitcode.Usage, v(cmd, args))
	}
}
