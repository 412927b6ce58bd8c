package storm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Config describes a storm. The zero value of each field but Catalog and
// Dir is its default.
type Config struct {
	// Catalog is the PostgreSQL location (a postgres:// URL) of the
	// catalog; Prepare creates it when the database holds none.
	Catalog string
	// Dir receives the workers' logs (*.jsonl) and output (*.out).
	Dir string
	// SharedWriters commit to one table, SharedTable (default 4);
	// SoloWriters each to a table of their own (default 4). A negative
	// count means none.
	SharedWriters int
	SoloWriters   int
	// Readers check snapshots while the writers commit (default 4;
	// negative: none).
	Readers int
	// Duration is how long the workers run (default 3s).
	Duration time.Duration
	// Files is the number of files per commit (default 4).
	Files int
	// MaxPause bounds the random pause between AddFiles and Commit
	// (default 2ms; negative: none), during which other writers of the
	// same table commit and make this one conflict.
	MaxPause time.Duration
	// Seed varies the pauses and the readers' choice of snapshots.
	Seed uint64
	// Executable is the program started as each worker; it must call
	// MaybeWorker first (default: this program, os.Executable).
	Executable string
	// Args are given to it (a test binary wants none: MaybeWorker runs
	// before flags are parsed).
	Args []string
	// Env is added to each worker's environment.
	Env []string
	// Postgres tunes each worker's connection pool and retries.
	Postgres pgkv.Options
}

// SharedTable is the table the shared writers commit to.
const SharedTable = "shared"

// SoloTable is the table of the solo writer with the given id.
func SoloTable(id int) string { return fmt.Sprintf("solo_%d", id) }

func count(n, def int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return def
	}
	return n
}

func (c Config) withDefaults() (Config, error) {
	if c.Catalog == "" || !pgkv.IsLocation(c.Catalog) {
		return c, errors.New("storm: Config.Catalog must name a PostgreSQL database (postgres://…)")
	}
	if c.Dir == "" {
		return c, errors.New("storm: Config.Dir is required (the workers' logs go there)")
	}
	c.SharedWriters = count(c.SharedWriters, 4)
	c.SoloWriters = count(c.SoloWriters, 4)
	c.Readers = count(c.Readers, 4)
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.Files <= 0 {
		c.Files = 4
	}
	switch {
	case c.MaxPause == 0:
		c.MaxPause = 2 * time.Millisecond
	case c.MaxPause < 0:
		c.MaxPause = 0
	}
	if c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("storm: the program to start as workers: %w", err)
		}
		c.Executable = exe
	}
	return c, nil
}

// tableOf is the table of writer id under the configuration's split: the
// first SharedWriters ids share one, every other id has its own.
func (c Config) tableOf(id int) string {
	if id < c.SharedWriters {
		return SharedTable
	}
	return SoloTable(id)
}

func (c Config) writerLog(id int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("writer-%03d.jsonl", id))
}
func (c Config) readerLog(id int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("reader-%03d.jsonl", id))
}

// columns is every storm table's schema: one BIGINT whose per-file
// bounds the path determines.
var columns = []catalog.ColumnDef{{Name: "x", Type: "BIGINT"}}

// Prepare creates the catalog when the database holds none, and the
// tables of the configured writers that do not exist yet.
func Prepare(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	opts := catalog.Options{Postgres: cfg.Postgres}
	c, err := catalog.Create(cfg.Catalog, opts)
	if errors.Is(err, catalog.ErrExists) {
		c, err = catalog.Open(cfg.Catalog, opts)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	seen := map[string]bool{}
	var tables []string
	for id := range cfg.SharedWriters + cfg.SoloWriters {
		if t := cfg.tableOf(id); !seen[t] {
			seen[t] = true
			tables = append(tables, t)
		}
	}
	return ensureTables(c, tables...)
}

// ensureTables creates the tables that do not exist yet, in one commit.
// Another process creating one of them first is no failure.
func ensureTables(c *catalog.Catalog, names ...string) error {
	for attempt := 0; ; attempt++ {
		r, err := c.Read(catalog.Latest)
		if err != nil {
			return err
		}
		tx, err := c.Begin()
		if err != nil {
			r.Close()
			return err
		}
		missing := 0
		for _, n := range names {
			if _, err := r.Table(n); errors.Is(err, catalog.ErrNoSuchTable) {
				tx.CreateTable(n, columns)
				missing++
			} else if err != nil {
				r.Close()
				return err
			}
		}
		r.Close()
		if missing == 0 {
			return nil
		}
		_, err = tx.Commit()
		switch {
		case err == nil:
			return nil
		case (errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrDuplicate)) && attempt < 20:
			continue
		default:
			return fmt.Errorf("storm: create tables %v: %w", names, err)
		}
	}
}

// filePath names file j of commit seq of writer id; parsePath reads it
// back. Paths need no file behind them: registration without a data root
// takes them as given.
func filePath(id int, seq int64, j int) string {
	return fmt.Sprintf("/storm/w%d/c%d/f%d.parquet", id, seq, j)
}

func parsePath(p string) (id int, seq int64, j int, ok bool) {
	var tail string
	n, err := fmt.Sscanf(p, "/storm/w%d/c%d/f%d%s", &id, &seq, &j, &tail)
	if err != nil || n != 4 || tail != ".parquet" || filePath(id, seq, j) != p {
		return 0, 0, 0, false
	}
	return id, seq, j, true
}

// fileFacts are a file's record count and bounds of x, all derived from
// its path: a reader checks any file it sees without asking its writer.
func fileFacts(id int, seq int64, j int) (rows, lo, hi int64) {
	rows = 1 + (int64(id)*31+seq*7+int64(j))%50
	lo = int64(id)*1_000_000_000 + seq*100 + int64(j)*10
	return rows, lo, lo + rows - 1
}

var bigint = func() *types.Codec {
	c, ok := types.CodecFor(types.MustParseType("BIGINT"))
	if !ok {
		panic("storm: no codec for BIGINT")
	}
	return c
}()

func encInt(x int64) []byte {
	b, err := bigint.Encode(types.IntValue(x))
	if err != nil {
		panic(err)
	}
	return b
}

func newFile(id int, seq int64, j int) catalog.NewFile {
	rows, lo, hi := fileFacts(id, seq, j)
	return catalog.NewFile{
		Path: filePath(id, seq, j), RecordCount: rows, FileSizeBytes: 1000 + rows, FooterSize: 100, RowGroupCount: 1,
		Columns: []catalog.FileColumn{{
			Path: []string{"x"},
			Stats: stats.Column{
				Min: stats.Known(encInt(lo)), Max: stats.Known(encInt(hi)), MinIsExact: true, MaxIsExact: true,
				NullCount: stats.Known(int64(0)), ValueCount: stats.Known(rows), RowCount: rows,
				ContainsNull: stats.Known(false),
			},
		}},
	}
}
