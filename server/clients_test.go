package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// node-postgres (pg) and pg-cursor, as a Node.js program uses them:
// parameters, node-postgres's types, a cursor's batches, and an error's
// SQLSTATE and position. .ci/run installs them (npm ci in
// testdata/node) from the lock file.
func TestClientNode(t *testing.T) {
	dir := filepath.Join("testdata", "node")
	node, err := exec.LookPath("node")
	if _, merr := os.Stat(filepath.Join(dir, "node_modules", "pg-cursor")); err != nil || merr != nil {
		const why = "Node.js with pg and pg-cursor is not installed (npm ci --prefix server/testdata/node)"
		if os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	f := newFixture(t, newConfig())
	cmd := exec.Command(node, "client.js", f.pgURL("tester", "", "disable"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{
		`params [{"id":"0","name":"n0"},{"id":"1","name":"n1"},{"id":"2","name":"n2"}]`, // int8 as a string, as node-postgres gives PostgreSQL's
		"types string true 2024-01-01T00:05:00.000Z string 6.25 n5",
		"fields id:20,ts:1184,amount:1700,name:25",
		"cursor 3 290 299",
		"error 22P02 29 clean",
		"after error 300",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}

// psql's cancel: Ctrl-C (SIGINT) while a query runs sends a
// CancelRequest on a connection of its own, and the query ends with
// PostgreSQL's message; the server goes on answering.
func TestClientPsqlCancel(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	cmd := exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=0", f.pgURL("tester", "", "disable"),
		"-c", "SELECT count(*) FROM range(100000000000) AS r(i) WHERE i % 7 = 3")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(1500 * time.Millisecond) // connected and running: psql cancels only a query in flight
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("psql still running 30 s after its cancel:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "Cancel request sent") || !strings.Contains(out.String(), "ERROR:  canceling statement due to user request") {
		t.Errorf("psql after Ctrl-C:\n%s", out.String())
	}
	after, err := exec.Command(psql, "-X", "-A", "-t", f.pgURL("tester", "", "disable"), "-c", "SELECT count(*) FROM t").CombinedOutput()
	if err != nil || strings.TrimSpace(string(after)) != "300" {
		t.Errorf("a query after the cancel: %v %s", err, after)
	}
}
