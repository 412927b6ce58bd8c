// Package results holds what the bench programs share: size lists from
// flags, CPU profiles, medians and JSON output.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sizes reads a comma-separated list of counts, each at least min.
func Sizes(s string, min int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < min {
			return nil, fmt.Errorf("%q is not a count ≥ %d", f, min)
		}
		out = append(out, n)
	}
	return out, nil
}

// Profile starts a CPU profile into path ("" does nothing); call the
// returned function to stop it.
func Profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// MedianMS is the median duration in milliseconds.
func MedianMS(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return MS(s[len(s)/2])
}

// MS is a duration in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteJSON writes v, indented, to path ("" does nothing), making its
// directory.
func WriteJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // SQL's < and > stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// LoadAverage is the machine's load averages over 1, 5 and 15 minutes, as
// /proc/loadavg gives them ("" where it cannot be read): benches record it
// before and after their runs, since other work on the machine moves
// their figures.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// ReadBytes is the bytes this process has read through read system calls
// (pread and sockets included) so far: rchar of /proc/self/io; 0 where
// there is no such file.
func ReadBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
