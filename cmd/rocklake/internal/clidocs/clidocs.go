// Package clidocs renders the CLI reference under docs/cli from the cobra
// command tree itself, so that the reference says what the commands say in
// their --help and cannot drift from them. The build-tagged generator
// (cmd/rocklake/gendocs.go: go run -tags gendocs ./cmd/rocklake gendocs)
// writes the pages, and a test in cmd/rocklake compares the checked-in
// pages with what Markdown renders now.
//
// Only the generator and the test import this package, so the rocklake
// binary links none of cobra's doc generator.
package clidocs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Regenerate is the command that rewrites the pages, as the pages and the
// test's failure name it.
const Regenerate = "go run -tags gendocs ./cmd/rocklake gendocs"

// header opens every page.
const header = "<!-- Generated from the commands' own help by `" + Regenerate + "`; do not edit. -->\n\n"

// prepare readies a fresh command tree for rendering: the completion
// command and the --version flag cobra adds when the program runs are
// added here too, and no page
// carries a generation date, so that rendering twice gives the same bytes.
func prepare(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// Markdown renders one page per available command of the tree under root,
// keyed by file name (rocklake_table_create.md). root must be a tree made
// for this call: rendering adds cobra's help and completion commands to it.
func Markdown(root *cobra.Command) (map[string][]byte, error) {
	prepare(root)
	pages := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() || s.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(s); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		buf.WriteString(header)
		if err := doc.GenMarkdownCustom(c, &buf, func(s string) string { return s }); err != nil {
			return fmt.Errorf("%s: %w", c.CommandPath(), err)
		}
		pages[strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"] = buf.Bytes()
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return pages, nil
}

// Names lists the pages' file names in order.
func Names(pages map[string][]byte) []string {
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteMarkdown writes the pages into dir, replacing the .md files there:
// a page of a command that no longer exists is removed.
func WriteMarkdown(root *cobra.Command, dir string) error {
	pages, err := Markdown(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, ok := pages[filepath.Base(p)]; !ok {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, n := range Names(pages) {
		if err := os.WriteFile(filepath.Join(dir, n), pages[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteMan writes a man page (section 1) per command into dir. Man pages
// are not checked in; they are made from the same tree when wanted.
func WriteMan(root *cobra.Command, dir string) error {
	prepare(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return doc.GenManTree(root, &doc.GenManHeader{Title: "ROCKLAKE", Section: "1", Source: "rocklake"}, dir)
}
