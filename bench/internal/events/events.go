// Package events writes the benches' events table: DuckDB-written Parquet
// files, one per hour, shared by bench/query and bench/procs so that both
// measure the same data.
package events

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocklake/rocklake/engine"
)

// HourUS is an hour in microseconds.
const HourUS = int64(3_600_000_000)

// Base is the first file's hour: 2024-01-01 00:00:00 UTC, in microseconds.
const Base = int64(1_704_067_200_000_000)

// File is the path of hour h's file in data.
func File(data string, h int) string {
	return filepath.Join(data, fmt.Sprintf("h%06d.parquet", h))
}

// TS is the start of hour h as a TIMESTAMPTZ literal's text.
func TS(h int) string {
	return time.UnixMicro(Base + int64(h)*HourUS).UTC().Format("2006-01-02 15:04:05+00")
}

// Generate writes n hourly files with DuckDB: ts inside the hour, a random
// high-cardinality user_id, one of 20 categories, an amount. A data
// directory marked COMPLETE is kept as it is, so that large sets are
// written once and reused.
func Generate(db *sql.DB, data string, n, rows int) error {
	return GenerateAs(db, data, n, rows, "")
}

// GenerateAs is Generate with user_id cast to the SQL type userID ("":
// DuckDB's hash type, UBIGINT, which Iceberg has no type for; BIGINT for
// a table Iceberg engines read).
func GenerateAs(db *sql.DB, data string, n, rows int, userID string) error {
	if _, err := os.Stat(filepath.Join(data, "COMPLETE")); err == nil {
		return nil
	}
	os.RemoveAll(data)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	for h := range n {
		if err := writeHour(db, data, h, rows, userID); err != nil {
			return err
		}
		if (h+1)%1000 == 0 {
			fmt.Fprintf(os.Stderr, "  wrote %d of %d files (%.0fs)\n", h+1, n, time.Since(t0).Seconds())
		}
	}
	return os.WriteFile(filepath.Join(data, "COMPLETE"), nil, 0o644)
}

// WriteHour writes hour h's file of rows rows into data.
func WriteHour(db *sql.DB, data string, h, rows int) error {
	return writeHour(db, data, h, rows, "")
}

func writeHour(db *sql.DB, data string, h, rows int, userID string) error {
	uid := fmt.Sprintf("hash(i, %d) %% 1000000000000", h)
	if userID != "" {
		uid = "(" + uid + ")::" + userID
	}
	q := fmt.Sprintf(`COPY (SELECT make_timestamptz(%d + (i * %d // %d)) AS ts,
		%s AS user_id,
		'cat' || (hash(i, %d, 1) %% 20)::VARCHAR AS category,
		((hash(i, %d, 2) %% 100000) / 100)::DECIMAL(10,2) AS amount
		FROM range(%d) r(i) ORDER BY ts) TO '%s' (FORMAT parquet)`,
		Base+int64(h)*HourUS, HourUS, rows, uid, h, h, rows, File(data, h))
	_, err := db.Exec(q)
	return err
}

// Lake is the events table of files × rows rows under root (written once
// and reused, as Generate does) registered in a catalog of its own by the
// rocklake binary given: the catalog's location and the data directory.
func Lake(rocklake, root string, files, rows int) (lake, data string, err error) {
	return LakeAs(rocklake, root, files, rows, "")
}

// LakeAs is Lake with user_id of the SQL type userID (see GenerateAs),
// under a directory of its own.
func LakeAs(rocklake, root string, files, rows int, userID string) (lake, data string, err error) {
	name := fmt.Sprintf("events-%d-%d", files, rows)
	if userID != "" {
		name += "-" + strings.ToLower(userID)
	}
	root = filepath.Join(root, name)
	data = filepath.Join(root, "data")
	duck, err := engine.Open("")
	if err != nil {
		return "", "", err
	}
	err = GenerateAs(duck, data, files, rows, userID)
	duck.Close()
	if err != nil {
		return "", "", err
	}
	lake = filepath.Join(root, "lake")
	if _, err := os.Stat(lake); err != nil {
		for _, args := range [][]string{{"init"}, {"add", "events", data, "--create"}} {
			if out, err := exec.Command(rocklake, append([]string{"--catalog", lake}, args...)...).CombinedOutput(); err != nil {
				return "", "", fmt.Errorf("rocklake %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	return lake, data, nil
}
