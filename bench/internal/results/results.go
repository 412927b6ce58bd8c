// Package results holds what the bench programs share: size lists from
// flags, CPU profiles, medians and JSON output.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
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

// ProcStatusMiB reads a memory field of /proc/self/status (VmRSS, VmHWM:
// kiB there) in MiB; 0 where the file or the field is absent.
func ProcStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// ResetPeakRSS starts the process's peak resident memory (VmHWM) again
// from what it holds now, so that a step's own peak can be read after it
// (Linux: clear_refs 5; elsewhere, or refused, the peak stays the
// process's).
func ResetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// PeakHeapProfile samples the live heap every 100 ms until stop is called
// and writes to path ("" does nothing) the heap profile taken when it was
// largest: what held the memory at a step's peak, which a profile taken
// after the step no longer shows. The profile is as of the last garbage
// collection before each sample.
func PeakHeapProfile(path string) (stop func() error) {
	if path == "" {
		return func() error { return nil }
	}
	done := make(chan struct{})
	finished := make(chan []byte)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		var best []byte
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				finished <- best
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/20 {
				var buf bytes.Buffer
				if pprof.Lookup("heap").WriteTo(&buf, 0) == nil {
					peak, best = v, buf.Bytes()
				}
			}
		}
	}()
	return func() error {
		close(done)
		best := <-finished
		if best == nil {
			return nil
		}
		return os.WriteFile(path, best, 0o644)
	}
}
