package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/server"
)

// selfSigned is a certificate for 127.0.0.1, made for one test.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rocklake test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// syncBuffer is a log sink tests read after the server wrote to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const (
	alicePassword = "alice-Pa55word-7f3k"
	bobPassword   = "bob-Pa55word-q8z1"
)

func authFile(t *testing.T) (path, readerToken, writerToken string) {
	t.Helper()
	va, err := server.Verifier(alicePassword)
	if err != nil {
		t.Fatal(err)
	}
	vb, _ := server.Verifier(bobPassword)
	readerToken, rsum, _ := server.NewToken()
	writerToken, wsum, _ := server.NewToken()
	a := server.Auth{
		Users:  []server.User{{Name: "alice", Role: server.Reader, Password: va}, {Name: "bob", Role: server.Writer, Password: vb}},
		Tokens: []server.Token{{Name: "dash", Role: server.Reader, SHA256: rsum}, {Name: "loader", Role: server.Writer, SHA256: wsum}},
	}
	path = filepath.Join(t.TempDir(), "auth.json")
	b, _ := jsonMarshal(a)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, readerToken, writerToken
}

func TestAuthenticationAndTLS(t *testing.T) {
	path, readerToken, writerToken := authFile(t)
	auth, err := server.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := newConfig()
	cfg.Auth, cfg.TLS = auth, selfSigned(t)
	cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	f := newFixture(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// PostgreSQL protocol.
	c, err := pgx.Connect(ctx, f.pgURL("alice", alicePassword, "require"))
	if err != nil {
		t.Fatalf("alice over TLS: %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("alice's query: %d %v", n, err)
	}
	c.Close(ctx)
	for _, tc := range []struct{ user, password, sslmode, code string }{
		{"alice", "wrong", "require", "28P01"},
		{"nobody", alicePassword, "require", "28P01"},
		{"alice", alicePassword, "disable", "28000"}, // TLS required
	} {
		_, err := pgx.Connect(ctx, f.pgURL(tc.user, tc.password, tc.sslmode))
		if code := sqlstate(err); code != tc.code {
			t.Errorf("%s with sslmode=%s: %v, want SQLSTATE %s", tc.user, tc.sslmode, err, tc.code)
		}
		if err != nil && strings.Contains(err.Error(), tc.password) && tc.password != "" {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if psql, err := exec.LookPath("psql"); err == nil {
		cmd := exec.Command(psql, "-X", "-A", "-t", "-c", "SELECT count(*) FROM t", f.pgURL("bob", "", "require"))
		cmd.Env = append(cmd.Environ(), "PGPASSWORD="+bobPassword, "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "300" {
			t.Errorf("psql as bob over TLS: %q %v", out, err)
		}
	}

	// HTTP.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + f.srv.HTTPAddr().String()
	call := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	extra := filepath.Join(f.data, "extra.parquet")
	db := openDuck(t)
	writeFile(t, db, extra, 300, 400)
	addBody := `{"paths": ["` + extra + `"]}`
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
	}{
		{"GET", "/v1/tables", "", "", 401},
		{"GET", "/v1/tables", "rlk_not-a-token", "", 401},
		{"GET", "/v1/tables", readerToken, "", 200},
		{"POST", "/v1/tables/t/files", readerToken, addBody, 403},
		{"POST", "/v1/tables/t/files", writerToken, addBody, 200},
		{"GET", "/healthz", "", "", 200},
	} {
		if status, body := call(tc.method, tc.path, tc.token, tc.body); status != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, status, body, tc.status)
		}
	}
	if _, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + f.srv.HTTPAddr().String() + "/v1/tables"); err == nil {
		// Go's TLS server answers plain HTTP with a 400, never data.
		resp, _ := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + f.srv.HTTPAddr().String() + "/v1/tables")
		if resp != nil && resp.StatusCode == 200 {
			t.Error("plain HTTP to the TLS port was answered")
		}
	}
	// The writer's add is one new snapshot the readers see.
	c, err = pgx.Connect(ctx, f.pgURL("alice", alicePassword, "require"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 400 {
		t.Errorf("after the add: %d %v", n, err)
	}
	for _, secret := range []string{alicePassword, bobPassword, readerToken, writerToken} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds a secret")
		}
	}
}

func TestInsecureListenRefused(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, err := server.New(nil, server.Config{PGListen: addr})
		if !errors.Is(err, server.ErrInsecure) {
			t.Errorf("%s without auth and TLS: %v", addr, err)
		}
	}
}

// Through the PostgreSQL protocol, each way out of the data directories
// is refused, and nothing is written where it should not be. The session
// is a writer's (no auth file): what rocklake does not run is 0A000.
func TestEscapesRefused(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	out := filepath.Join(f.data, "out.csv")
	secret := filepath.Join(f.dir, "secret.txt")
	os.WriteFile(secret, []byte("top secret\n"), 0o600)
	for q, code := range map[string]string{
		"SELECT * FROM read_csv('" + secret + "')":                   "42501",
		"SELECT * FROM read_text('/etc/hostname')":                   "42501",
		"SELECT * FROM glob('" + f.dir + "/*')":                      "42501",
		"SELECT * FROM read_parquet('" + f.data + "/../secret.txt')": "42501",
		"COPY t TO '" + out + "'":                                    "0A000",
		"COPY (SELECT 1) TO '" + out + "'":                           "0A000",
		"ATTACH '" + filepath.Join(f.data, "x.db") + "'":             "0A000",
		"INSTALL httpfs":                                   "0A000",
		"LOAD httpfs":                                      "0A000",
		"SET enable_external_access = true":                "42704",
		"PRAGMA enable_external_access":                    "0A000",
		"SELECT * FROM query('COPY t TO ''" + out + "''')": "42601",
		// Writes read what queries may read, and nothing else.
		"COPY t FROM '" + secret + "'":                                                    "42501",
		"CREATE TABLE z AS SELECT * FROM read_text('" + secret + "')":                     "42501",
		"INSERT INTO t (name) SELECT content FROM read_text('" + secret + "')":            "42501",
		"INSERT INTO t (name) VALUES ((SELECT content FROM read_text('" + secret + "')))": "42501",
		"INSERT INTO t (name) SELECT enable_logging()":                                    "42501",
	} {
		_, err := c.Exec(context.Background(), q)
		if got := sqlstate(err); got != code {
			t.Errorf("%s: %v (SQLSTATE %s), want %s", q, err, got, code)
		}
		if err != nil && strings.Contains(err.Error(), "top secret") {
			t.Errorf("%s: the error shows the file", q)
		}
	}
	for _, p := range []string{out, filepath.Join(f.data, "x.db")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}
