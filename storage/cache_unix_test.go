//go:build unix

package storage_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/storage"
)

// TestCacheAcrossProcesses: a pin held by another process keeps its entry
// from eviction; once that process is gone, the entry can go. The child
// is this test binary, run with ROCKLAKE_CACHE_CHILD naming the entry.
func TestCacheAcrossProcesses(t *testing.T) {
	if p := os.Getenv("ROCKLAKE_CACHE_CHILD"); p != "" {
		// The child: pin the entry the way Get does, say so, and hold it
		// until stdin closes.
		f, err := os.Open(p)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("pinned")
		io.Copy(io.Discard, os.Stdin)
		return
	}
	dir := t.TempDir()
	entry := filepath.Join(dir, "0123-4567-0-1000.parquet")
	if err := os.WriteFile(entry, payload(1000, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(entry, old, old)
	child := exec.Command(os.Args[0], "-test.run=^TestCacheAcrossProcesses$")
	child.Env = append(os.Environ(), "ROCKLAKE_CACHE_CHILD="+entry)
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "pinned\n" {
		stdin.Close()
		child.Wait()
		t.Fatalf("child: %q, %v", line, err)
	}
	cache := &storage.Cache{Dir: dir, Budget: 1}
	cache.Trim(nil)
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("an entry another process pinned was evicted: %v", err)
	}
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	cache.Trim(nil)
	if _, err := os.Stat(entry); err == nil {
		t.Error("the entry outlived its pin and the budget")
	}
}
