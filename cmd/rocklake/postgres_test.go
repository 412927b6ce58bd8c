package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// named is how errors name a test database: user, host, no password.
const named = "postgres://rocklake@127.0.0.1:"

// pgCatalog is a new empty database's URL and the password it holds.
func pgCatalog(t *testing.T) (loc, password string) {
	t.Helper()
	loc = pgtest.URL(t)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	password, ok := u.User.Password()
	if !ok || len(password) < 8 {
		t.Fatal("pgtest gave a URL without a password worth searching for")
	}
	return loc, password
}

// withURL is loc changed by f.
func withURL(t *testing.T, loc string, f func(u *url.URL)) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	f(u)
	return u.String()
}

// secretKeeper runs commands and fails the test if any secret shows in
// what they print or in their errors.
type secretKeeper struct {
	t       *testing.T
	secrets []string
}

func (k secretKeeper) check(args []string, texts ...string) {
	k.t.Helper()
	for _, text := range texts {
		for _, s := range k.secrets {
			if strings.Contains(text, s) {
				k.t.Error(k.hide("rocklake %s shows a password:\n%s", strings.Join(args, " "), text))
			}
		}
	}
}

// hide masks the secrets in what a failing test prints about a command.
func (k secretKeeper) hide(format string, args ...any) string {
	s := fmt.Sprintf(format, args...)
	for _, sec := range k.secrets {
		s = strings.ReplaceAll(s, sec, "<PASSWORD>")
	}
	return s
}

// run runs the command and checks its output and error.
func (k secretKeeper) run(args ...string) (string, error) {
	k.t.Helper()
	out, err := run(k.t, args...)
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	k.check(args, out, errText)
	return out, err
}

func (k secretKeeper) mustRun(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	if err != nil {
		k.t.Fatal(k.hide("rocklake %s: %v\n%s", strings.Join(args, " "), err, out))
	}
	return out
}

// fails runs a command that must fail as a command that ran (exit status
// 1) with a one-line error holding every want.
func (k secretKeeper) fails(args []string, want ...string) {
	k.t.Helper()
	_, err := k.run(args...)
	if err == nil {
		k.t.Error(k.hide("rocklake %s succeeded", strings.Join(args, " ")))
		return
	}
	msg := err.Error()
	if exitCode(err) != exitFailure || strings.Contains(msg, "\n") {
		k.t.Error(k.hide("rocklake %s: exit %d, error %q; want exit %d and one line", strings.Join(args, " "), exitCode(err), msg, exitFailure))
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			k.t.Error(k.hide("rocklake %s: error %q does not say %q", strings.Join(args, " "), msg, w))
		}
	}
}

func TestPostgresCatalogCommands(t *testing.T) {
	loc, password := pgCatalog(t)
	k := secretKeeper{t, []string{password}}
	data := t.TempDir()
	paths := writeEvents(t, data, 3)

	out := k.mustRun("--catalog", loc, "init")
	if !strings.HasPrefix(out, "created catalog postgres://rocklake@127.0.0.1:") {
		t.Fatal(k.hide("init: %q", out))
	}
	k.fails([]string{"--catalog", loc, "init"}, named, "already exists")
	k.mustRun("--catalog", loc, "table", "create", "other", "id BIGINT")
	k.mustRun("--catalog", loc, "add", "events", paths[0], paths[1], "--create")
	var added struct {
		Files int `json:"file_count"`
		Rows  int `json:"rows"`
	}
	if err := json.Unmarshal([]byte(k.mustRun("--catalog", loc, "--format", "json", "add", "events", data, "--skip-existing")), &added); err != nil || added.Files != 1 || added.Rows != 30 {
		t.Fatal(k.hide("add --skip-existing: %+v %v", added, err))
	}
	var snaps struct{ Snapshots []snapshotInfo }
	if err := json.Unmarshal([]byte(k.mustRun("--catalog", loc, "--format", "json", "snapshots")), &snaps); err != nil || len(snaps.Snapshots) != 4 {
		t.Fatal(k.hide("snapshots: %+v %v", snaps, err))
	}
	if out := k.mustRun("--catalog", loc, "snapshots"); !strings.Contains(out, "inserted into tables") {
		t.Fatal(k.hide("snapshots: %q", out))
	}
	if out := k.mustRun("--catalog", loc, "table", "list"); !strings.Contains(out, "events") || !strings.Contains(out, "other") {
		t.Fatal(k.hide("table list: %q", out))
	}
	if out := k.mustRun("--catalog", loc, "files", "events"); strings.Count(out, ".parquet") != 3 {
		t.Fatal(k.hide("files: %q", out))
	}
	k.mustRun("--catalog", loc, "stats", "events")
	if out := k.mustRun("--catalog", loc, "--format", "csv", "query", "SELECT count(*) AS n FROM events"); out != "n\n90\n" {
		t.Fatal(k.hide("query: %q", out))
	}
	k.fails([]string{"--catalog", loc, "add", "nosuch", paths[0]}, "nosuch")
	var compacted struct {
		Catalog string
		Before  *int64 `json:"bytes_before"`
		After   *int64 `json:"bytes_after"`
	}
	if err := json.Unmarshal([]byte(k.mustRun("--catalog", loc, "--format", "json", "catalog", "compact")), &compacted); err != nil ||
		!strings.HasPrefix(compacted.Catalog, named) || compacted.Before == nil || compacted.After == nil || *compacted.After <= 0 {
		t.Fatal(k.hide("catalog compact: %+v %v", compacted, err))
	}
	if out := k.mustRun("--catalog", loc, "--format", "csv", "query", "SELECT count(*) AS n FROM events"); out != "n\n90\n" {
		t.Fatal(k.hide("query after catalog compact: %q", out))
	}

	// A schema of its own, named by search_path, shows in the location.
	inSchema := withURL(t, loc, func(u *url.URL) { u.RawQuery += "&search_path=lake" })
	var created struct{ Catalog string }
	if err := json.Unmarshal([]byte(k.mustRun("--catalog", inSchema, "--format", "json", "init")), &created); err != nil ||
		!strings.HasPrefix(created.Catalog, "postgres://rocklake@127.0.0.1:") || !strings.HasSuffix(created.Catalog, " (schema lake)") {
		t.Fatal(k.hide("init in schema lake: %+v %v", created, err))
	}
	if out := k.mustRun("--catalog", inSchema, "table", "list"); strings.Contains(out, "events") {
		t.Fatal(k.hide("the catalog in schema lake sees the one in public: %q", out))
	}
}

func TestPostgresInitDataRoot(t *testing.T) {
	loc, password := pgCatalog(t)
	k := secretKeeper{t, []string{password}}
	base := t.TempDir()
	lake := filepath.Join(base, "lake")
	in := writeEvents(t, lake, 1)[0]
	out := writeEvents(t, filepath.Join(base, "other"), 1)[0]
	var created struct {
		Catalog  string
		DataRoot string `json:"data_root"`
	}
	if err := json.Unmarshal([]byte(k.mustRun("--catalog", loc, "--format", "json", "init", "--data-root", lake)), &created); err != nil || created.DataRoot == "" {
		t.Fatal(k.hide("init --data-root: %+v %v", created, err))
	}
	k.mustRun("--catalog", loc, "add", "t", in, "--create")
	k.fails([]string{"--catalog", loc, "add", "t", out}, "data root")
}

// TestPostgresCatalogErrors: every way of not getting at a catalog in a
// database is one line that names the database without the password, and
// exit status 1 as any command that ran and failed.
func TestPostgresCatalogErrors(t *testing.T) {
	loc, password := pgCatalog(t)
	const wrong = "wrong-password-5e1f"
	k := secretKeeper{t, []string{password, wrong}}
	badPassword := withURL(t, loc, func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), wrong) })
	noDatabase := withURL(t, loc, func(u *url.URL) { u.Path = "/rl_missing_db" })
	refused := withURL(t, loc, func(u *url.URL) { u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(closedPort(t))) })

	for _, cmd := range [][]string{{"init"}, {"snapshots"}, {"--format", "json", "table", "list"}} {
		k.fails(append([]string{"--catalog", badPassword}, cmd...), named, "password authentication failed", "28P01", "PGPASSWORD")
		k.fails(append([]string{"--catalog", noDatabase}, cmd...), named, `database "rl_missing_db" does not exist`)
		k.fails(append([]string{"--catalog", refused}, cmd...), named, "refused the connection")
	}
	k.fails([]string{"--catalog", loc, "snapshots"}, named, "holds no rocklake catalog", "rocklake init")

	foreign, fpw := pgCatalog(t)
	k.secrets = append(k.secrets, fpw)
	conn, err := pgx.Connect(context.Background(), foreign)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `CREATE TABLE orders (id int)`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	k.fails([]string{"--catalog", foreign, "init"}, named, "not rocklake's", "orders", "search_path")
	// The other schema is free.
	k.mustRun("--catalog", withURL(t, foreign, func(u *url.URL) { u.RawQuery += "&search_path=rocklake" }), "init")

	k.mustRun("--catalog", loc, "init")
	k.fails([]string{"--catalog", loc, "init"}, named, "already exists")
}

// TestPostgresSecretsInProcessOutput runs the CLI as a process, the
// location in ROCKLAKE_CATALOG: stdout, stderr and help never show the
// password, and a failure exits 1 with one line on stderr.
func TestPostgresSecretsInProcessOutput(t *testing.T) {
	loc, password := pgCatalog(t)
	const wrong = "wrong-password-77c2"
	badPassword := withURL(t, loc, func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), wrong) })
	k := secretKeeper{t, []string{password, wrong}}
	proc := func(env string, wantExit int, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := cli(args...)
		cmd.Env = append(cmd.Env, "ROCKLAKE_CATALOG="+env)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		k.check(args, o.String(), e.String())
		if code != wantExit {
			t.Error(k.hide("rocklake %s: exit %d, want %d; stderr %q", strings.Join(args, " "), code, wantExit, e.String()))
		}
		return o.String(), e.String()
	}
	if out, _ := proc(loc, 0, "init"); !strings.Contains(out, "created catalog postgres://rocklake@127.0.0.1:") {
		t.Error(k.hide("init: %q", out))
	}
	for _, help := range [][]string{{"--help"}, {"snapshots", "--help"}, {"init", "--help"}} {
		if out, _ := proc(loc, 0, help...); !strings.Contains(out, "--catalog") || !strings.Contains(out, "postgres://rocklake:xxxxx@127.0.0.1:") {
			t.Error(k.hide("rocklake %s: want the default location shown masked:\n%s", strings.Join(help, " "), out))
		}
	}
	proc(loc, 0, "snapshots")
	_, stderr := proc(badPassword, exitFailure, "snapshots")
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rocklake: catalog postgres://rocklake@127.0.0.1:") {
		t.Error(k.hide("wrong password: stderr %q, want one line naming the database", stderr))
	}
	proc(badPassword, exitFailure, "init")
	proc(loc, exitFailure, "init")
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestPostgresFromEnvironment: what the location leaves out comes from
// PostgreSQL's own PG* variables and password file, as for psql.
func TestPostgresFromEnvironment(t *testing.T) {
	loc, password := pgCatalog(t)
	k := secretKeeper{t, []string{password}}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	passfile := filepath.Join(t.TempDir(), "pgpass")
	line := strings.Join([]string{u.Hostname(), u.Port(), db, u.User.Username(), password}, ":") + "\n"
	if err := os.WriteFile(passfile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"PGHOST": u.Hostname(), "PGPORT": u.Port(), "PGUSER": u.User.Username(), "PGDATABASE": db,
		"PGSSLMODE": "disable", "PGPASSFILE": passfile, "PGPASSWORD": "",
	} {
		t.Setenv(name, v)
	}
	if out := k.mustRun("--catalog", "postgres://", "init"); !strings.HasPrefix(out, "created catalog "+named+u.Port()+"/"+db+":") {
		t.Fatal(k.hide("init from PG* and the password file: %q", out))
	}
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	k.fails([]string{"--catalog", "dbname=" + db, "snapshots"}, named, "password authentication failed")
	t.Setenv("PGPASSWORD", password)
	if out := k.mustRun("--catalog", "dbname="+db, "snapshots"); !strings.Contains(out, "created schemas [0]") {
		t.Fatal(k.hide("snapshots with PGPASSWORD: %q", out))
	}
}
