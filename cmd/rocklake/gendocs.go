//go:build gendocs

// The CLI reference's generator, in builds with the gendocs tag only (the
// rocklake binary does not link cobra's doc generator):
//
//	go run -tags gendocs ./cmd/rocklake gendocs             # docs/cli/*.md
//	go run -tags gendocs ./cmd/rocklake gendocs --man DIR   # and man pages in DIR
//
// TestCLIReferenceIsCurrent fails when docs/cli differs from what this
// writes.

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/cmd/rocklake/internal/clidocs"
)

func init() {
	extraCommands = append(extraCommands, newGendocsCmd)
}

func newGendocsCmd(*globals) *cobra.Command {
	var dir, man string
	cmd := &cobra.Command{
		Use:    "gendocs",
		Short:  "Write the CLI reference (docs/cli) from the commands' own help",
		Hidden: true,
		Args:   cobra.NoArgs,
		// The root's checks (--format, a served catalog) do not apply.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Defaults that follow the environment are rendered as a
			// fresh shell has them.
			os.Unsetenv("ROCKLAKE_CATALOG")
			if err := clidocs.WriteMarkdown(newRootCmd(), dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", dir)
			if man != "" {
				if err := clidocs.WriteMan(newRootCmd(), man); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote man pages to %s\n", man)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "docs/cli", "directory of the markdown pages")
	cmd.Flags().StringVar(&man, "man", "", "also write man pages (section 1) into this directory")
	return cmd
}
