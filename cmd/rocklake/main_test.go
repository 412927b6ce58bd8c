package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// run executes the CLI in-process and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "rocklake "+version) || !strings.Contains(out, "DuckDB v1.") {
		t.Fatalf("unexpected version text: %q", out)
	}
	out, err = run(t, "version", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info versionInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("version --format json is not JSON: %v\n%s", err, out)
	}
	if info.Version != version || !strings.HasPrefix(info.DuckDB, "v1.") || !strings.HasPrefix(info.Go, "go1.") {
		t.Fatalf("unexpected version JSON: %+v", info)
	}
}

func TestBadFormatIsAnError(t *testing.T) {
	_, err := run(t, "version", "--format", "xml")
	if err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("want an error naming the bad format, got %v", err)
	}
}

func TestCatalogFlagDefaultsToEnv(t *testing.T) {
	t.Setenv("ROCKLAKE_CATALOG", "/tmp/elsewhere")
	root := newRootCmd()
	if got := root.PersistentFlags().Lookup("catalog").DefValue; got != "/tmp/elsewhere" {
		t.Fatalf("--catalog default = %q, want the env value", got)
	}
	t.Setenv("ROCKLAKE_CATALOG", "")
	if got := newRootCmd().PersistentFlags().Lookup("catalog").DefValue; got != "./lake" {
		t.Fatalf("--catalog default = %q, want ./lake", got)
	}
}

func TestUnknownCommand(t *testing.T) {
	if _, err := run(t, "frobnicate"); err == nil {
		t.Fatal("an unknown command must fail")
	}
}
