package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ForEach calls f(i) for every i in [0, n), workers at a time, and returns
// what failed as one error. Once a call fails because its store is
// unreachable (ErrUnreachable), no further call starts: every one would
// fail the same way. That failure is reported once, counting the objects
// it left unread (the calls that failed on it and those never made); other
// failures are listed, the first few shown, all reachable by errors.Is
// and errors.As.
func ForEach(n, workers int, f func(i int) error) error {
	errs, started := fan(n, workers, f)
	return joinFailures(errs, n-started)
}

// fan is ForEach's loop: the error of each call (nil for one not made)
// and how many were made.
func fan(n, workers int, f func(i int) error) ([]error, int) {
	errs := make([]error, n)
	var mu sync.Mutex
	next, stop := 0, false
	var wg sync.WaitGroup
	for range min(max(workers, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				if stop || i >= n {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				if err := f(i); err != nil {
					errs[i] = err
					if errors.Is(err, ErrUnreachable) {
						mu.Lock()
						stop = true
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	return errs, next
}

// joinFailures is ForEach's error: nil when errs holds none and no call was
// left out.
func joinFailures(errs []error, notStarted int) error {
	var down error
	var rest []error
	unreached := notStarted
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ErrUnreachable):
			unreached++
			if down == nil {
				down = err
			}
		default:
			rest = append(rest, err)
		}
	}
	if down != nil {
		down = NotReached(down, unreached)
	}
	switch {
	case down == nil && len(rest) == 0:
		return nil
	case len(rest) == 0:
		return down
	case down == nil && len(rest) == 1:
		return rest[0]
	}
	all := rest
	if down != nil {
		all = append([]error{down}, rest...)
	}
	const show = 10
	lines := make([]string, 0, show+1)
	for i, err := range all {
		if i == show {
			lines = append(lines, fmt.Sprintf("... and %d more", len(all)-show))
			break
		}
		lines = append(lines, err.Error())
	}
	return &failures{msg: strings.Join(lines, "\n"), errs: all}
}

// failures is many errors shown as the first few; every one stays
// reachable by errors.Is and errors.As.
type failures struct {
	msg  string
	errs []error
}

func (e *failures) Error() string   { return e.msg }
func (e *failures) Unwrap() []error { return e.errs }
