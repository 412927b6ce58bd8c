package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// globals are the flags every command shares.
type globals struct {
	catalog string
	format  string
	// served, in a server running a client's command (remote.go), is the
	// server's open lake: commands use it instead of opening --catalog.
	served *rocklake.Lake
}

const (
	formatText = "text"
	formatJSON = "json"
)

// defaultCatalog is ROCKLAKE_CATALOG when set, else ./lake.
func defaultCatalog() string {
	if dir := os.Getenv("ROCKLAKE_CATALOG"); dir != "" {
		return dir
	}
	return "./lake"
}

func newRootCmd() *cobra.Command { return newRootCmdWith(&globals{}) }

// extraCommands are commands that only some builds have: gendocs.go adds
// the hidden generator of the CLI reference under the gendocs build tag.
var extraCommands []func(*globals) *cobra.Command

func newRootCmdWith(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "rocklake",
		Short: "A lakehouse catalog and scan planner for Parquet tables",
		Long: `rocklake keeps a catalog of Parquet tables (snapshots, files and per-file,
per-row-group and per-page column statistics) in an embedded key-value store
or in a PostgreSQL database, and uses those statistics to skip every file, row
group and page that cannot hold a matching row before running the query on
embedded DuckDB.

--catalog (or ROCKLAKE_CATALOG) is a directory, or a PostgreSQL location: a
postgres:// URL or libpq's "host=... dbname=..." form; the PG* environment
variables and ~/.pgpass fill in what it leaves out.`,
		// --version prints what `rocklake version` prints first; that
		// command adds the Go and DuckDB versions (and --format json).
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSnapshotFlag(cmd); err != nil {
				return err
			}
			if err := checkFormat(cmd, g); err != nil {
				return err
			}
			// A catalog directory a server holds open: the command runs
			// in the server (see remote.go).
			if forwarded, err := forward(cmd, g, args); forwarded {
				return err
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.catalog, "catalog", defaultCatalog(),
		"catalog directory or PostgreSQL URL (env ROCKLAKE_CATALOG)")
	// Help prints the default, and ROCKLAKE_CATALOG may hold a password.
	root.PersistentFlags().Lookup("catalog").DefValue = pgkv.Redact(defaultCatalog())
	root.PersistentFlags().StringVar(&g.format, "format", formatText, "output format: text or json (query also: table, csv, tsv, jsonl)")
	root.SetVersionTemplate("rocklake {{.Version}}\n")
	root.AddCommand(newVersionCmd(g), newInitCmd(g), newTableCmd(g), newSnapshotsCmd(g), newStatsCmd(g), newAddCmd(g), newPlanCmd(g), newQueryCmd(g), newDemoCmd(g), newVerifyCmd(g), newErasureCmd(g), newChangesCmd(g), newRefreshCmd(g), newAnalyzeCmd(g), newOptimizeCmd(g), newCompactCmd(g), newFoldCmd(g), newExpireCmd(g), newCleanupCmd(g), newFilesCmd(g), newRmCmd(g), newCatalogCmd(g), newServeCmd(g))
	root.AddCommand(newExportCmd(g), newImportCmd(g), newSyncCmd(g))
	for _, extra := range extraCommands {
		root.AddCommand(extra(g))
	}
	markUsageErrors(root)
	return root
}

// checkFormat refuses a --format the command does not print.
func checkFormat(cmd *cobra.Command, g *globals) error {
	switch g.format {
	case formatText, formatJSON:
		return nil
	}
	if cmd.Name() == "query" || cmd.Name() == "changes" {
		if slices.Contains(queryFormats, g.format) {
			return nil
		}
		return usagef("--format must be one of %s, not %q", strings.Join(queryFormats, ", "), g.format)
	}
	return usagef("--format must be %q or %q, not %q (query also takes %s)", formatText, formatJSON, g.format,
		strings.Join(queryFormats[2:], ", "))
}

// writeJSON prints v as indented JSON, the shape every --format json
// output shares.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// marshalJSON is json.MarshalIndent (json.Marshal with no indent) without
// its HTML escaping: <, > and & stay as they are, in output that programs
// and people read and no page embeds.
func marshalJSON(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(prefix, indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
