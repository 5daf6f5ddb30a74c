package cmd

import (
	"github.com/spf13/cobra"

	"imagectl/internal/runtime"
)

func newFingerprintCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fingerprint",
		Short: "Compare the environment fingerprints that imagectl-init writes at container start",
		Long: `Every container started by imagectl-init can write an environment fingerprint
(runtime.fingerprint_path, or IMAGECTL_FINGERPRINT_PATH): driver version, GPUs,
the image's CUDA/torch versions, swappiness, /dev/shm size, storage mount and
options, cache paths and the image digest. When a job works on one machine and
not on another, diff their fingerprints.`,
	}
	cmd.AddCommand(newFingerprintDiffCmd())
	return cmd
}

func newFingerprintDiffCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Show the fields that differ between two fingerprints",
		Long: `Diff lists every field that differs between two fingerprint files, GPUs by
index (driver.gpus[1].model); the collection time is ignored. A field present
on one side only shows "-" on the other. The exit code is 0 whether or not
they differ.`,
		Example: `  imagectl fingerprint diff good-node.json bad-node.json
  imagectl fingerprint diff -o json a.json b.json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			a, err := runtime.ReadFingerprint(args[0])
			if err != nil {
				return err
			}
			b, err := runtime.ReadFingerprint(args[1])
			if err != nil {
				return err
			}
			diffs, err := runtime.DiffFingerprints(a, b)
			if err != nil {
				return err
			}
			if asJSON {
				if diffs == nil {
					diffs = []runtime.Difference{}
				}
				return writeJSON(cmd.OutOrStdout(), diffs)
			}
			return runtime.WriteDiffText(cmd.OutOrStdout(), args[0], args[1], diffs)
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}
