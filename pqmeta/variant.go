package pqmeta

import (
	"strings"

	"github.com/rocklake/rocklake/types"
)

// VariantLeaf places a leaf inside a shredded VARIANT column.
type VariantLeaf struct {
	// Column is the VARIANT column's path, parts joined by NUL (a name may
	// hold ".").
	Column string
	// Path is the sub-field the leaf belongs to, as DuckLake's
	// variant_path spells it: root, "a", element, element."a".
	Path string
	// Typed is set for the sub-field's typed_value leaf, which holds the
	// shredded values; the untyped value fallback has it unset.
	Typed bool
}

// variantGroup reads a VARIANT-annotated group: `metadata`, `value`, and an
// optional `typed_value` tree. The column is a VARIANT; its leaves keep no
// bounds of their own, but typed_value leaves feed the variant stats.
func (w *schemaWalker) variantGroup(name string, cat, pq []string, kids int, repeated bool) (*Column, error) {
	c, err := w.structGroup(name, cat, pq, kids, repeated)
	if err != nil {
		return nil, err
	}
	for _, l := range c.Leaves {
		sub := l.parquet[len(pq):]
		if vp, typed, ok := variantPath(sub); ok {
			l.Variant = &VariantLeaf{Column: strings.Join(cat, "\x00"), Path: vp, Typed: typed}
		}
		l.keepDec = l.dec
		l.dec = decNone
		l.Path = nil // the leaves' stats are not the column's own
	}
	c.Type = types.Simple(types.KindVariant)
	return c, nil
}

// variantPath turns a Parquet path below a VARIANT group into DuckLake's
// variant_path. The layout nests `typed_value` groups: an object's fields
// are named groups under typed_value, each again {value, typed_value}; an
// array's typed_value is a LIST whose element is {value, typed_value}.
// It reports whether the leaf is a typed_value leaf (it carries the
// shredded values), and false for metadata and non-leaf paths.
func variantPath(sub []string) (path string, typed bool, ok bool) {
	if len(sub) == 0 || sub[0] == "metadata" {
		return "", false, false
	}
	var parts []string
	i := 0
	for i < len(sub) {
		switch sub[i] {
		case "value":
			if i != len(sub)-1 {
				return "", false, false
			}
			return render(parts), false, true
		case "typed_value":
			if i == len(sub)-1 {
				return render(parts), true, true
			}
			next := sub[i+1]
			if next == "list" && i+2 < len(sub) && sub[i+2] == "element" {
				parts = append(parts, "element")
				i += 3
				continue
			}
			parts = append(parts, quoteVariantField(next))
			i += 2
		default:
			return "", false, false
		}
	}
	return "", false, false
}

func render(parts []string) string {
	if len(parts) == 0 {
		return "root"
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += "." + p
	}
	return out
}

// quoteVariantField quotes an object field name, doubling inner quotes.
func quoteVariantField(name string) string {
	q := `"`
	for _, r := range name {
		if r == '"' {
			q += `""`
		} else {
			q += string(r)
		}
	}
	return q + `"`
}
