package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`^#{1,6} (.*)$`)
	slugDropRe = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// headingAnchor is the anchor GitHub gives a heading.
func headingAnchor(h string) string {
	return strings.ReplaceAll(slugDropRe.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// Every relative link of the README and the manual, the CLI reference
// included, names a file that exists and, after a #, a heading it has.
func TestDocLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	pages := docPages(t, root)
	cli, err := filepath.Glob(filepath.Join(root, "docs", "cli", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cli {
		pages = append(pages, filepath.Join("docs", "cli", filepath.Base(p)))
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, bool) {
		if a, ok := anchors[rel]; ok {
			return a, true
		}
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, false
		}
		a := map[string]bool{}
		inFence := false
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if m := mdHeading.FindStringSubmatch(l); m != nil && !inFence {
				a[headingAnchor(m[1])] = true
			}
		}
		anchors[rel] = a
		return a, true
	}
	links := 0
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			rel := page
			if path != "" {
				rel = filepath.Join(filepath.Dir(page), path)
			}
			links++
			if st, err := os.Stat(filepath.Join(root, rel)); err == nil && st.IsDir() {
				continue
			}
			a, ok := anchorsOf(rel)
			switch {
			case !ok:
				t.Errorf("%s: link to %s: no such file", page, target)
			case frag != "" && !a[frag]:
				t.Errorf("%s: link to %s: %s has no heading #%s", page, target, rel, frag)
			}
		}
	}
	if links < 50 {
		t.Errorf("checked %d links; the pages were not read", links)
	}
	t.Logf("%d links checked", links)
}
