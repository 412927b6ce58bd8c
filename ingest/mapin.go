package ingest

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// MapIn fills in an add column's MappedIn (catalog.Alteration): every live
// file of the table that holds the column though it was registered without
// it (add --ignore-extra-columns) reads its own values from then on, not
// the default, so the commit needs the column as each file holds it — its
// name and type — and the file's statistics for it, read from its footer
// in the added column's type (exact where the footer's bounds are). A
// file whose type the added one does not widen exactly gets no statistics
// here: the commit refuses the alteration, naming it. Other alterations
// come back as they are.
//
// The files are read from the newest snapshot; a file registered after it
// and before the commit makes the commit fail (it is not given), never
// read as the default. objects reads s3:// files (nil: a store from the
// environment when one is needed).
func MapIn(ctx context.Context, c *catalog.Catalog, table string, a catalog.Alteration, objects storage.Store) (catalog.Alteration, error) {
	if a.Kind != catalog.AddColumn || len(a.MappedIn) > 0 {
		return a, nil
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		return a, err
	}
	defer r.Close()
	t, err := r.Table(table)
	if err != nil {
		return a, err
	}
	files, err := r.Files(t.ID)
	if err != nil {
		return a, err
	}
	m, err := r.ColumnMapping(t.ID)
	if err != nil {
		return a, err
	}
	holders := m.HoldersOf(files, a.Column)
	if len(holders) == 0 {
		return a, nil
	}
	typ, err := types.ParseType(a.Type)
	if err != nil {
		// The commit reports it, as for any add column.
		return a, nil
	}
	col := catalog.Column{Name: a.Column, Path: []string{a.Column}, Type: typ}
	for _, f := range holders {
		if err := ctx.Err(); err != nil {
			return a, err
		}
		path := f.Location(t)
		tg := target{path: path, id: f.Identity}
		if catalog.IsObject(path) {
			if objects == nil {
				if objects, err = storage.NewS3(ctx, storage.S3OptionsFromEnv()); err != nil {
					return a, fmt.Errorf("%s: %w", path, err)
				}
			}
			tg.obj = &storage.Object{Location: path, Size: f.FileSizeBytes, ETag: f.ETag}
		}
		fi, err := inspectTarget(tg, objects)
		if err != nil {
			return a, &FileError{Path: path, Err: fmt.Errorf("reading its column %q: %w", a.Column, err)}
		}
		if fi.meta.Size != f.FileSizeBytes {
			return a, &FileError{Path: path, Err: fmt.Errorf("holds %d bytes, registered as %d: the file changed since it was registered, so its column %q cannot be mapped in", fi.meta.Size, f.FileSizeBytes, a.Column)}
		}
		fc, ok := fi.columns[types.FoldIdent(a.Column)]
		if !ok {
			return a, &FileError{Path: path, Err: fmt.Errorf("registered without its column %q, which it no longer holds", a.Column)}
		}
		mf := catalog.MappedFile{FileID: f.ID, Name: fc.Name, Type: fc.Type}
		widens, _ := catalog.Widens(fc.Type, typ)
		if len(fc.Leaves) == 1 && (fc.Type.Equal(typ) || widens) {
			if l, ok := fi.meta.Leaf([]string{fc.Name}); ok && l.Variant == nil {
				st := fi.leafColumn(l, col)
				mf.Stats, mf.RowGroups = &st.Stats, st.RowGroups
			}
		}
		a.MappedIn = append(a.MappedIn, mf)
	}
	return a, nil
}
