package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/scan"
	"imagectl/internal/spec"
)

// specFlags are the flags of commands that load specs.
type specFlags struct{ vars []string }

func (f *specFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a spec variable, name=value (repeatable; wins over IMAGECTL_VAR_<name>)")
}

// options turns the flags into spec.Load options; a malformed --var is a
// usage error.
func (f *specFlags) options() ([]spec.Option, error) {
	vars := map[string]string{}
	for _, kv := range f.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--var %q: want name=value", kv))
		}
		vars[k] = v
	}
	return []spec.Option{spec.WithVars(vars)}, nil
}

// pathError makes a spec path that does not exist a usage error.
func pathError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	return err
}

// specPaths defaults to the specs/ directory.
func specPaths(args []string) []string {
	if len(args) == 0 {
		return []string{"specs"}
	}
	return args
}

func newLintCmd() *cobra.Command {
	var sf specFlags
	var out outputFlag
	var imagesDir string
	cmd := &cobra.Command{
		Use:   "lint [paths...]",
		Short: "Check specs: syntax, types, variables, matrix names and the compatibility catalog",
		Long: `Lint decodes the specs strictly and applies the compatibility catalog. Every
problem is reported with file:line:col and a source snippet.

Paths are spec files or directories of *.hcl files; the default is specs/.
An image's OpenVEX document (--images/NAME/vex.json) is checked too: each
statement needs a justification when not_affected, and must match the image
(product pkg:oci/NAME; a pkg:pypi subcomponent must be in the image's lock).
Exit codes: 0 clean, 1 spec errors, 2 usage.`,
		Example: `  imagectl lint
  imagectl lint specs/pytorch.hcl
  imagectl lint --var registry=127.0.0.1:5000 specs/
  imagectl lint -o json specs/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			opts, err := sf.options()
			if err != nil {
				return err
			}
			var warns spec.DiagnosticsError
			imgs, err := spec.Load(cmd.Context(), specPaths(args), append(opts, spec.WithWarnings(&warns))...)
			var de *spec.DiagnosticsError
			if err != nil && !errors.As(err, &de) {
				return pathError(err)
			}
			vexErrs := lintVEX(imgs, imagesDir)
			if asJSON {
				r := struct {
					Images      []string          `json:"images"`
					Diagnostics []spec.Diagnostic `json:"diagnostics"`
					VEX         []string          `json:"vex"`
				}{Images: []string{}, Diagnostics: []spec.Diagnostic{}, VEX: vexErrs}
				for _, img := range imgs {
					r.Images = append(r.Images, img.Name)
				}
				if de != nil {
					r.Diagnostics = de.List()
				} else {
					r.Diagnostics = warns.List()
				}
				if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else if de != nil {
				if err := de.WriteText(cmd.ErrOrStderr(), 100, false); err != nil {
					return err
				}
			} else {
				if err := warns.WriteText(cmd.ErrOrStderr(), 100, false); err != nil {
					return err
				}
				if len(vexErrs) == 0 {
					problems := "no problems"
					if n := len(warns.Diagnostics); n > 0 {
						problems = plural(n, "warning")
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "%s, %s\n", plural(len(imgs), "image"), problems)
				}
			}
			if !asJSON {
				for _, e := range vexErrs {
					fmt.Fprintln(cmd.ErrOrStderr(), e)
				}
			}
			if len(vexErrs) > 0 {
				return exitcode.Wrap(exitcode.Failure, fmt.Errorf("lint: %s in VEX documents", plural(len(vexErrs), "problem")))
			}
			if de != nil {
				return exitcode.Wrap(exitcode.Failure, fmt.Errorf("lint: %s", plural(len(de.List()), "problem")))
			}
			return nil
		},
	}
	sf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringVar(&imagesDir, "images", "images", "directory holding images/<name>/ (lock.json, vex.json)")
	return cmd
}

// lintVEX checks each image's images/NAME/vex.json, when there is one.
func lintVEX(imgs []spec.Image, imagesDir string) []string {
	out := []string{}
	for _, img := range imgs {
		path := filepath.Join(imagesDir, img.Name, scan.VEXFile)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		l, _ := lock.Read(filepath.Join(imagesDir, img.Name, "lock.json")) // nil without a lock: products only
		if err := scan.LintVEX(path, img.Name, l); err != nil {
			out = append(out, strings.Split(err.Error(), "\n")...)
		}
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
