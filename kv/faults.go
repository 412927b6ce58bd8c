package kv

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

var (
	// ErrNoSpace reports that the store's file system is full. The store
	// is as of its last acknowledged commit; freeing space makes it
	// writable again.
	ErrNoSpace = errors.New("no space left on device")
	// ErrCorrupt reports damage to the store's files: a checksum mismatch,
	// a truncated or missing file, an unreadable manifest or log.
	ErrCorrupt = errors.New("store is corrupt")
	// ErrReadOnly is returned by writes to a store opened read-only.
	ErrReadOnly = errors.New("store is open read-only")
)

// StoreError is a failure of the store itself (as opposed to a missing key
// or a misuse): Kind is ErrNoSpace, ErrCorrupt or nil for any other I/O
// failure; File names the damaged file when one is known.
type StoreError struct {
	Kind error
	Dir  string
	File string
	Err  error
}

func (e *StoreError) Error() string {
	detail := firstLine(e.Err)
	switch e.Kind {
	case ErrNoSpace:
		if detail == "" || detail == ErrNoSpace.Error() {
			return fmt.Sprintf("no space left on device in %s", absDir(e.Dir))
		}
		return fmt.Sprintf("no space left on device in %s (%s)", absDir(e.Dir), detail)
	case ErrCorrupt:
		if e.File != "" {
			return fmt.Sprintf("store is corrupt: %s: %s", e.File, detail)
		}
		return fmt.Sprintf("store is corrupt in %s: %s", absDir(e.Dir), detail)
	}
	return fmt.Sprintf("store %s failed: %s", absDir(e.Dir), detail)
}

func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// Unwrap exposes the kind, and ENOSPC for a full disk, but not the cause's
// chain: a missing table file must not read as "no store here".
func (e *StoreError) Unwrap() []error {
	if e.Kind == ErrNoSpace {
		return []error{e.Kind, syscall.ENOSPC}
	}
	if e.Kind != nil {
		return []error{e.Kind}
	}
	return nil
}

// firstLine keeps an error's message short: Pebble's errors can carry
// multi-line detail and stack traces.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrNoSpace)
}

// failState is what a store knows of its own failure. The first failure
// wins: after it the store writes nothing more (its file system refuses
// every write) and every call returns that failure.
type failState struct {
	dir   string
	mu    sync.Mutex
	err   error
	fired chan struct{}
	// corruptPath is the file Pebble last reported as corrupt.
	corruptPath string
}

func newFailState(dir string) *failState {
	return &failState{dir: dir, fired: make(chan struct{})}
}

func (s *failState) fail(err error) {
	err = s.classify(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.fired)
		return
	}
	// The disk-full hook knows only that a write failed; keep the
	// operation and file that Pebble reports next.
	first, ok1 := s.err.(*StoreError)
	next, ok2 := err.(*StoreError)
	if ok1 && ok2 && first.Kind == ErrNoSpace && next.Kind == ErrNoSpace &&
		first.Err == syscall.ENOSPC && next.Err != syscall.ENOSPC {
		richer := *first
		richer.Err = next.Err
		s.err = &richer
	}
}

func (s *failState) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

var (
	tableNum = regexp.MustCompile(`\b(?:file|table|sstable) (\d{6,})\b`)
	metaFile = regexp.MustCompile(`\b(?:MANIFEST|OPTIONS)-\d{6,}\b`)
)

// classify turns Pebble's errors into StoreErrors naming what went wrong
// and, for damage, the file.
func (s *failState) classify(err error) error {
	if err == nil {
		return nil
	}
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	switch {
	case isNoSpace(err):
		return &StoreError{Kind: ErrNoSpace, Dir: s.dir, Err: err}
	case pebble.IsCorruptionError(err) || errors.Is(err, pebble.ErrCorruption):
		return &StoreError{Kind: ErrCorrupt, Dir: s.dir, File: s.damagedFile(err), Err: err}
	}
	return err
}

func (s *failState) damagedFile(err error) string {
	s.mu.Lock()
	p := s.corruptPath
	s.mu.Unlock()
	if p != "" {
		return p
	}
	msg := err.Error()
	if m := metaFile.FindString(msg); m != "" {
		return filepath.Join(s.dir, m)
	}
	if strings.Contains(msg, "key=value") {
		return strings.Join(listGlob(s.dir, "OPTIONS-*"), ", ")
	}
	if m := tableNum.FindStringSubmatch(msg); m != nil {
		return filepath.Join(s.dir, m[1]+".sst")
	}
	if strings.Contains(msg, "WAL") || strings.Contains(msg, "pebble/record") {
		if logs := listGlob(s.dir, "*.log"); len(logs) > 0 {
			return strings.Join(logs, ", ")
		}
	}
	if strings.Contains(msg, "MANIFEST") || strings.Contains(msg, "manifest") {
		if m := listGlob(s.dir, "MANIFEST-*"); len(m) > 0 {
			return strings.Join(m, ", ")
		}
	}
	return ""
}

func listGlob(dir, pattern string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	sort.Strings(m)
	return m
}

// latch refuses every write once the store has failed, so that nothing a
// failed (possibly abandoned) Pebble instance still runs in the background
// can change the files: the store stays as of its last acknowledged commit.
func (s *failState) latch() errorfs.Injector {
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
			return nil
		}
		if err := s.failed(); err != nil {
			return fmt.Errorf("kv: store stopped after a failure: %w", err)
		}
		return nil
	})
}

// noLockFS leaves locking to the store, which holds the directory's lock
// itself and so can release it even when it has to abandon a Pebble
// instance that never returned.
type noLockFS struct{ vfs.FS }

func (noLockFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }

// logger keeps Pebble's errors out of the user's terminal (the store
// returns them instead) and turns Pebble's fatal errors, which its own
// logger answers by ending the process, into a failure of this store.
type logger struct{ s *failState }

func (logger) Infof(string, ...any)  {}
func (logger) Errorf(string, ...any) {}

// fatalPanic carries a fatal error up to guard.
type fatalPanic struct{ err error }

func (l logger) Fatalf(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	for _, a := range args {
		if e, ok := a.(error); ok {
			err = fmt.Errorf("%s: %w", firstLine(err), e)
			break
		}
	}
	l.s.fail(err)
	if inGuard() {
		panic(fatalPanic{err})
	}
	// On one of Pebble's own goroutines nothing can catch a panic; return
	// and let the latch keep the failed instance from writing.
}

// guard runs fn and turns a fatal error raised inside it into its result.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch v := r.(type) {
			case fatalPanic:
				err = v.err
			case error:
				// Pebble panics with the error of a write it cannot
				// undo (a log it cannot close or create).
				err = v
			default:
				panic(r)
			}
		}
	}()
	return fn()
}

var guardName = runtime.FuncForPC(reflect.ValueOf(guard).Pointer()).Name()

func inGuard() bool {
	pcs := make([]uintptr, 512)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function == guardName {
			return true
		}
		if !more {
			return false
		}
	}
}

// listener records Pebble's background failures instead of logging them:
// Pebble retries a failed flush at once and forever, which on a full disk
// printed thousands of lines and kept Open and Flush waiting.
func listener(s *failState) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			s.fail(err)
			// Pebble calls this with its own mutex held and retries
			// straight away; slow the retries of a failed instance down.
			time.Sleep(50 * time.Millisecond)
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			s.mu.Lock()
			if s.corruptPath == "" {
				s.corruptPath = info.Path
			}
			s.mu.Unlock()
			s.fail(info.Details)
		},
	}
}

// call runs fn on a goroutine of its own and returns its result, or the
// store's failure as soon as there is one: a Pebble instance that has
// failed may never return (it waits for a flush it retries forever).
func (s *failState) call(fn func() error) error {
	if err := s.failed(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- guard(fn) }()
	select {
	case err := <-done:
		return s.classify(err)
	case <-s.fired:
		select {
		case err := <-done:
			if err == nil {
				return nil
			}
		case <-time.After(100 * time.Millisecond):
		}
		return s.failed()
	}
}
