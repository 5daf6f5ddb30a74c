package cmd

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/runtime"
)

func newDoctorCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Explain common GPU-container failures from the live environment",
		Long: `Doctor looks at the environment it runs in (inside the image, or on a GPU node)
and explains the failures users meet most:

  torch.cuda.is_available() is False   no driver, driver below the image's floor,
                                       or missing /dev/nvidia* device nodes
  NCCL timeouts, DataLoader bus error  /dev/shm too small (64M default)
  disk full from torch.compile         compile caches and their filesystem
  checkpoints lost, exit 75 at start   storage not mounted or not ready

It reads the image's runtime config (` + runtime.ConfigPath + `, or
IMAGECTL_RUNTIME_CONFIG) for the floor, the shm minimum, storage and caches, and
changes nothing. Inside an image without imagectl, run "imagectl-init doctor".
Exit codes: 0 nothing failed, 1 at least one check failed.`,
		Example: `  imagectl doctor
  IMAGECTL_RUNTIME_CONFIG=runtime.json imagectl doctor -o json
  docker run --rm --gpus all IMAGE doctor   # the image's entrypoint is imagectl-init`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			cfg, err := runtime.LoadConfig(os.Getenv)
			if err != nil {
				return exitcode.Wrap(exitcode.Usage, err)
			}
			r, err := runtime.Diagnose(cmd.Context(), cfg, os.Environ())
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), r)
			} else {
				err = r.WriteText(cmd.OutOrStdout())
			}
			if err == nil && r.Failed() {
				err = errors.New("doctor: at least one check failed")
			}
			return err
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}
