package pgkv_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv/pgkv"
)

func TestRedactMasksEveryPasswordForm(t *testing.T) {
	for _, tc := range []struct{ loc, secret, keep string }{
		{"postgres://u:s3cr3t@h:5432/db", "s3cr3t", "postgres://u:xxxxx@h:5432/db"},
		{"postgresql://u:s3cr3t@h/db?sslmode=disable", "s3cr3t", "sslmode=disable"},
		{"postgres://u@h/db?password=s3cr3t", "s3cr3t", "postgres://u@h/db"},
		{"postgres://u@h/db?sslpassword=s3cr3t", "s3cr3t", "postgres://u@h/db"},
		// Not URLs Go parses: a bad escape, a space, a slash in the password.
		{"postgres://u:s3%zzcr3t@h/db", "s3%zzcr3t", "@h/db"},
		{"postgres://u:s3 cr3t@h/db", "cr3t", "@h/db"},
		{"postgres://u:s3/cr3t@h/db", "cr3t", "@h/db"},
		{"host=h password=s3cr3t dbname=db", "s3cr3t", "dbname=db"},
		{"host=h password='s3 cr3t' dbname=db", "cr3t", "dbname=db"},
		{"host=h PASSWORD = s3cr3t", "s3cr3t", "host=h"},
		{"host=h sslpassword=s3cr3t", "s3cr3t", "host=h"},
	} {
		got := pgkv.Redact(tc.loc)
		if strings.Contains(got, tc.secret) || !strings.Contains(got, "xxxxx") || !strings.Contains(got, tc.keep) {
			t.Errorf("Redact(%q) = %q: want the password masked and %q kept", tc.loc, got, tc.keep)
		}
	}
	if got := pgkv.Redact("/srv/lake"); got != "/srv/lake" {
		t.Errorf("Redact of a directory changed it: %q", got)
	}
}

// TestConnectErrorsAreOneLineWithoutPassword covers the ways a first
// connection fails: each error is one line, names the database without
// the password, and says what went wrong.
func TestConnectErrorsAreOneLineWithoutPassword(t *testing.T) {
	good := pgtest.URL(t)
	u, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	with := func(f func(u *url.URL)) string {
		c := *u
		f(&c)
		return c.String()
	}
	refusedPort := closedPort(t)
	const wrong = "not-the-password-42"
	for _, tc := range []struct {
		name, loc, want, code string
	}{
		{"wrong password", with(func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), wrong) }),
			"password authentication failed", "28P01"},
		{"no such database", with(func(u *url.URL) { u.Path = "/rl_no_such_database" }),
			`database "rl_no_such_database" does not exist`, "3D000"},
		{"refused", with(func(u *url.URL) { u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(refusedPort)) }),
			"refused the connection", ""},
		// sslmode=prefer makes pgx try twice and report both, on lines of
		// their own.
		{"refused, keyword form", "host=127.0.0.1 port=" + strconv.Itoa(refusedPort) + " user=rocklake password=" + wrong + " dbname=x",
			"refused the connection", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgkv.Open(context.Background(), tc.loc, pgkv.Options{})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if strings.Contains(msg, password) || strings.Contains(msg, wrong) {
				t.Errorf("error shows a password: %q", msg)
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "postgres://rocklake@127.0.0.1:") {
				t.Errorf("error %q: want %q and the database named", msg, tc.want)
			}
			var pe *pgconn.PgError
			if tc.code != "" && (!errors.As(err, &pe) || pe.Code != tc.code) {
				t.Errorf("error %q does not carry SQLSTATE %s", msg, tc.code)
			}
		})
	}
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestInitInAGrantedSchema: a role that may not create schemas makes its
// catalog in a schema an administrator gave it, and is told what it lacks
// when the schema is missing.
func TestInitInAGrantedSchema(t *testing.T) {
	admin := pgtest.URL(t)
	ctx := context.Background()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	role := "rl_limited_" + strings.TrimPrefix(u.Path, "/rl_")
	role = role[:min(len(role), 60)]
	const rolePassword = "limited-role-pw-1"
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ident := pgx.Identifier{role}.Sanitize()
	if err := exec(`CREATE ROLE ` + ident + ` LOGIN PASSWORD '` + rolePassword + `'; CREATE SCHEMA given AUTHORIZATION ` + ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec(`DROP OWNED BY ` + ident + `; DROP ROLE ` + ident); err != nil {
			t.Error(err)
		}
	})
	as := func(schema string) string {
		c := *u
		c.User = url.UserPassword(role, rolePassword)
		q := c.Query()
		q.Set("search_path", schema)
		c.RawQuery = q.Encode()
		return c.String()
	}
	s, err := pgkv.Init(ctx, as("given"), pgkv.Options{})
	if err != nil {
		t.Fatalf("init in a schema the role owns: %v", err)
	}
	s.Close()
	_, err = pgkv.Init(ctx, as("missing"), pgkv.Options{})
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(err.Error(), "may create the schema missing") {
		t.Fatalf("init in a schema the role may not create: %v", err)
	}
}
