package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The erasure procedure through the CLI: a delete, expire, cleanup, and
// `erasure` saying at each step what still holds the rows, exiting 3
// until nothing does.
func TestErasureCommand(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "query", "CREATE TABLE ev (user_id VARCHAR, n BIGINT)")
	mustRun(t, "--catalog", lake, "table", "alter", "ev", "set", "option", "delete_mode", "=", "copy-on-write")
	mustRun(t, "--catalog", lake, "query", "INSERT INTO ev SELECT 'u-' || (i % 50), i FROM range(1000) r(i)")
	check := func(wantCode int, wantState string) {
		t.Helper()
		out, err := run(t, "--catalog", lake, "erasure", "ev", "--where", "user_id = 'u-7'")
		if code := exitCode(err); code != wantCode {
			t.Fatalf("erasure: exit %d (%v), want %d: %q", code, err, wantCode, out)
		}
		if wantState != "" && !strings.HasPrefix(out, wantState+" ") {
			t.Fatalf("erasure: %q, want a %s file first", out, wantState)
		}
	}
	check(exitProblems, "live")
	out := mustRun(t, "--catalog", lake, "query", "DELETE FROM ev WHERE user_id = 'u-7'")
	if !strings.Contains(out, "DELETE ev: 20 rows deleted; 1 file rewritten into 1 file") {
		t.Fatalf("delete: %q", out)
	}
	check(exitProblems, "retired")
	mustRun(t, "--catalog", lake, "expire", "--older-than", "0s", "--allow-short-retention")
	check(exitProblems, "expired")
	mustRun(t, "--catalog", lake, "cleanup", "--grace", "0s")
	check(0, "")
	out = mustRun(t, "--catalog", lake, "--format", "json", "erasure", "ev", "--where", "user_id = 'u-7'")
	var rep struct {
		Erased  bool  `json:"erased"`
		Checked int   `json:"checked_file_count"`
		Holders []any `json:"holders"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Erased || rep.Checked != 1 || rep.Holders == nil || len(rep.Holders) != 0 {
		t.Fatalf("json: %q %v", out, err)
	}
	if out, err := run(t, "--catalog", lake, "erasure", "ev"); exitCode(err) != exitUsage {
		t.Fatalf("no --where: %v %q", err, out)
	}
	if out, err := run(t, "--catalog", lake, "erasure", "ev", "--where", "nope = 1"); exitCode(err) != exitProblems || !strings.Contains(out, "not checked") {
		t.Fatalf("a predicate that does not bind: %v %q", err, out)
	}
}
