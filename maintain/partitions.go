package maintain

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// partitionKeys are the SQL expressions, over the slots, of the table's
// declared layout (catalog.Table.PartitionedBy): rows with equal keys go
// to the same files. bucket(N) is DuckDB's hash of the value modulo N
// (not Iceberg's murmur3): a layout, not a format other engines read.
// texts are the same values as the text a file's layout values record
// (catalog.LayoutValue): each a function of its key, so one per file.
func partitionKeys(st *tableState) (out, texts []string, err error) {
	top := catalog.TopLevel(st.cols)
	for _, f := range st.t.PartitionedBy {
		i := slices.IndexFunc(top, func(c catalog.Column) bool { return c.ID == f.ColumnID })
		if i < 0 {
			return nil, nil, fmt.Errorf("table %q: partition field %s names column %d, which the table lacks", st.t.Name, f.Transform, f.ColumnID)
		}
		x := slot(i)
		switch {
		case f.Transform == "identity":
			out = append(out, x)
			texts = append(texts, "CAST("+x+" AS VARCHAR)")
		case f.Transform == "year":
			out = append(out, "year("+x+")")
			texts = append(texts, "CAST(year("+x+") AS VARCHAR)")
		case f.Transform == "month":
			out = append(out, fmt.Sprintf("year(%[1]s) * 12 + month(%[1]s)", x))
			texts = append(texts, fmt.Sprintf("CAST(year(%[1]s) AS VARCHAR) || '-' || lpad(CAST(month(%[1]s) AS VARCHAR), 2, '0')", x))
		case f.Transform == "day":
			out = append(out, "CAST("+x+" AS DATE)")
			texts = append(texts, "CAST(CAST("+x+" AS DATE) AS VARCHAR)")
		case f.Transform == "hour":
			out = append(out, "date_trunc('hour', "+x+")")
			texts = append(texts, "CAST(date_trunc('hour', "+x+") AS VARCHAR)")
		case strings.HasPrefix(f.Transform, "bucket("):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f.Transform, "bucket("), ")"))
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("table %q: partition field %s: bad bucket count", st.t.Name, f.Transform)
			}
			out = append(out, fmt.Sprintf("hash(%s) %% %d", x, n))
			texts = append(texts, fmt.Sprintf("CAST(hash(%s) %% %d AS VARCHAR)", x, n))
		default:
			return nil, nil, fmt.Errorf("table %q: unknown partition transform %q", st.t.Name, f.Transform)
		}
	}
	return out, texts, nil
}

// layoutValues are the declared layout's values of the row numbered rn in
// from: those of every row of the file it begins.
func layoutValues(ctx context.Context, conn *sql.Conn, st *tableState, texts []string, from, rnCol string, rn int64) ([]catalog.LayoutValue, error) {
	vals := make([]sql.NullString, len(texts))
	ptrs := make([]any, len(texts))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = %d", strings.Join(texts, ", "), from, rnCol, rn)).Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make([]catalog.LayoutValue, len(texts))
	for i, f := range st.t.PartitionedBy {
		out[i] = catalog.LayoutValue{ColumnID: f.ColumnID, Transform: f.Transform}
		if vals[i].Valid {
			out[i].Value = stats.Known(vals[i].String)
		}
	}
	return out, nil
}

// hiveLayout is how a rewrite keeps a table's Hive partitions (columns
// whose values are the files' key=value directories, which no file holds):
// rows are laid out by those columns first, so that every file written
// holds one partition's rows, each file goes under the key=value
// directories of an input file of its partition, its values spelled as
// that file's path spells them (registration reads them back, in the
// table's types, as the same values) under the columns' names now (a
// renamed partition column's files keep their old directories, but files
// added later name it as it is), and the files hold every column but
// those.
type hiveLayout struct {
	slots  []int // the top-level positions of the partition columns
	groups []hiveGroup
}

// hiveGroup is one partition of the input files: its values, as the
// catalog stores them, and the directories of one of its files.
type hiveGroup struct {
	values []catalog.PartitionValue
	dirs   []string
}

// newHiveLayout is nil for a table without partition columns.
func newHiveLayout(st *tableState, files []catalog.DataFile, paths []string) (*hiveLayout, error) {
	top := catalog.TopLevel(st.cols)
	var hl hiveLayout
	for i, c := range top {
		if c.Partition != "" {
			hl.slots = append(hl.slots, i)
		}
	}
	if len(hl.slots) == 0 {
		return nil, nil
	}
	m, err := st.r.ColumnMapping(st.t.ID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, f := range files {
		var key strings.Builder
		g := hiveGroup{}
		for _, s := range hl.slots {
			v, _ := f.PartitionValue(top[s].ID)
			g.values = append(g.values, catalog.PartitionValue{ColumnID: top[s].ID, Value: v})
			if v.Known {
				fmt.Fprintf(&key, "%q,", v.V)
			} else {
				key.WriteString("NULL,")
			}
		}
		if seen[key.String()] {
			continue
		}
		seen[key.String()] = true
		// An object is read from a cached copy whose path has no
		// key=value directories: its key has them.
		src := paths[i]
		if loc := f.Location(st.t); catalog.IsObject(loc) {
			src = loc
		}
		dirs, err := ingest.HiveDirs(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		for _, s := range hl.slots {
			c := top[s]
			if strings.ContainsAny(c.Name, "/=") || c.Name == "." || c.Name == ".." {
				return nil, fmt.Errorf("table %q: partition column %q cannot name a key=value directory", st.t.Name, c.Name)
			}
			held, _, _ := m.Source(c, f) // the key the file's path spells
			at := slices.IndexFunc(dirs, func(d string) bool {
				k, _, _ := strings.Cut(d, "=")
				return types.SameIdent(k, held)
			})
			if at < 0 {
				return nil, fmt.Errorf("%s: no %s= directory in the path, for partition column %q", src, held, c.Name)
			}
			_, raw, _ := strings.Cut(dirs[at], "=")
			g.dirs = append(g.dirs, c.Name+"="+raw)
		}
		hl.groups = append(hl.groups, g)
	}
	return &hl, nil
}

// hiveNull is the directory value Hive, Spark and DuckDB write for a NULL
// partition value, which registration reads as NULL.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// hiveEscape spells a partition value as a key=value directory holds it:
// every byte but ASCII letters, digits and -_.~ percent-escaped, which
// registration and DuckDB's hive_partitioning both decode. Fewer escapes
// would not do: DuckDB takes a raw '\' for a directory separator, and a
// raw '=' or '?' makes it read no partition at all. A value read as NULL
// (NULL in any case, or hiveNull) has its first byte escaped too, which
// is decoded but not taken for NULL.
func hiveEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		safe := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
		if safe && !(i == 0 && (strings.EqualFold(s, "NULL") || s == hiveNull)) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// groupsOfRows makes the partitions of a write from the distinct values
// of its rows (from's partition slots, as read: a sort may have handed
// back normalised copies): each group's values as the catalog will store
// them, and its directories, each checked to read back, as registration
// reads a path, as that same stored value. A value no directory can hold
// as the catalog keeps it (NaN, -0.0) is refused, as add refuses such a
// directory.
func (hl *hiveLayout) groupsOfRows(ctx context.Context, conn *sql.Conn, top []catalog.Column, from string) error {
	sel := make([]string, len(hl.slots))
	for j, s := range hl.slots {
		c := top[s]
		if strings.ContainsAny(c.Name, "/=") || c.Name == "." || c.Name == ".." {
			return fmt.Errorf("partition column %q cannot name a key=value directory", c.Name)
		}
		sel[j] = "CAST(" + slot(s) + " AS VARCHAR)"
	}
	// DISTINCT over the text, not the values: -0.0 and 0.0 are equal
	// values with two texts.
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT "+strings.Join(sel, ", ")+" FROM "+from)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]sql.NullString, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		var g hiveGroup
		for j, s := range hl.slots {
			c := top[s]
			if !vals[j].Valid {
				g.values = append(g.values, catalog.PartitionValue{ColumnID: c.ID})
				g.dirs = append(g.dirs, c.Name+"="+hiveNull)
				continue
			}
			stored, dir, err := hiveDir(c, vals[j].String)
			if err != nil {
				return err
			}
			if name := c.Name + "=" + dir; len(name) > maxDirName {
				shown := vals[j].String
				if r := []rune(shown); len(r) > 40 {
					shown = string(r[:40]) + "…"
				}
				return fmt.Errorf("partition column %q: the value %q needs a directory name of %d bytes (every byte but A-Z a-z 0-9 - _ . ~ is written as %%XX), more than the %d a file system allows",
					c.Name, shown, len(name), maxDirName)
			}
			g.values = append(g.values, catalog.PartitionValue{ColumnID: c.ID, Value: stats.Known(stored)})
			g.dirs = append(g.dirs, c.Name+"="+dir)
		}
		hl.groups = append(hl.groups, g)
	}
	return rows.Err()
}

// maxDirName is the longest name of a directory Linux file systems (ext4,
// xfs, btrfs, tmpfs) allow, in bytes.
const maxDirName = 255

// hiveDir is the directory value of partition column c's value whose
// DuckDB text is text, and the value as the catalog stores it; an error
// where registration would read the directory as anything else.
func hiveDir(c catalog.Column, text string) (stored, dir string, err error) {
	var v types.Value
	codec, ok := types.CodecFor(c.Type)
	if !ok {
		return "", "", fmt.Errorf("partition column %q: type %s has no text form", c.Name, c.Type)
	}
	if v, err = codec.Parse(text); err != nil {
		return "", "", fmt.Errorf("partition column %q: DuckDB's text %q does not read back as %s: %w", c.Name, text, c.Type, err)
	}
	if (c.Type.Kind == types.KindFloat || c.Type.Kind == types.KindDouble) && math.IsNaN(v.F) {
		// Registration keeps a partition value as its file's exact bounds,
		// which NaN cannot be (add refuses a p=nan directory).
		return "", "", fmt.Errorf("partition column %q: a NaN partition value is not supported (the value is kept as its files' exact bounds)", c.Name)
	}
	if types.NegativeZero(c.Type, text) {
		return "", "", fmt.Errorf("partition column %q: %q is %s", c.Name, text, catalog.NegativeZeroPartition)
	}
	stored = codec.Format(v)
	dir = hiveEscape(text)
	dec, err := url.PathUnescape(dir)
	if err != nil || strings.EqualFold(dir, "NULL") || dir == hiveNull {
		return "", "", fmt.Errorf("partition column %q: the value %q has no directory that reads back", c.Name, text)
	}
	back, err := codec.Parse(dec)
	if err != nil || codec.Format(back) != stored {
		return "", "", fmt.Errorf("partition column %q: the value %q would read back from its directory as another value", c.Name, text)
	}
	return stored, dir, nil
}

// partitionValue is the SQL constant of a stored partition value, as
// queries read it (engine's fileConsts).
func partitionValue(c catalog.Column, v stats.Maybe[string]) string {
	dt := types.DuckDBName(c.Type)
	if dt == "" {
		dt = "VARCHAR"
	}
	if !v.Known {
		return "CAST(NULL AS " + dt + ")"
	}
	return "CAST('" + strings.ReplaceAll(v.V, "'", "''") + "' AS " + dt + ")"
}

// groupsTable creates a temporary table of the partitions: gid and the
// values (p0, p1, ...), as queries read them.
func (hl *hiveLayout) groupsTable(ctx context.Context, conn *sql.Conn, top []catalog.Column, name string) error {
	var rows []string
	for gid, g := range hl.groups {
		vals := []string{strconv.Itoa(gid)}
		for j, s := range hl.slots {
			vals = append(vals, partitionValue(top[s], g.values[j].Value))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	cols := []string{"gid"}
	for j := range hl.slots {
		cols = append(cols, fmt.Sprintf("p%d", j))
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM (VALUES %s) g(%s)", name, strings.Join(rows, ", "), strings.Join(cols, ", ")))
	return err
}

// groupOf is the partition of the row numbered rn in from (a run of one
// partition's rows): the group whose values it holds, NULLs equal,
// compared as text as the groups were made (equal INTERVALs of two
// spellings are two partitions).
func (hl *hiveLayout) groupOf(ctx context.Context, conn *sql.Conn, groups, from, rnCol string, rn int64) (int, error) {
	var on []string
	for j, s := range hl.slots {
		on = append(on, fmt.Sprintf("CAST(g.p%d AS VARCHAR) IS NOT DISTINCT FROM CAST(r.%s AS VARCHAR)", j, slot(s)))
	}
	var gid int
	err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT min(g.gid) FROM %s g JOIN (SELECT * FROM %s WHERE %s = %d) r ON %s",
		groups, from, rnCol, rn, strings.Join(on, " AND "))).Scan(&gid)
	return gid, err
}

// held says top-level position i is written into files: not a partition
// column.
func (hl *hiveLayout) held(i int) bool { return hl == nil || !slices.Contains(hl.slots, i) }

// isKeyValue says whether a path segment reads as a partition's key=value
// directory (or object key prefix) to registration.
func isKeyValue(seg string) bool {
	k, _, ok := strings.Cut(seg, "=")
	return ok && k != ""
}

// noKeyValueDirs refuses an output directory a key=value directory of
// which registration would read as one more partition key.
func noKeyValueDirs(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, seg := range strings.Split(filepath.ToSlash(abs), "/") {
		if isKeyValue(seg) {
			return fmt.Errorf("the output directory %s is below %q, which registration would read as a partition directory: choose one without '=' in its path", dir, seg)
		}
	}
	return nil
}
