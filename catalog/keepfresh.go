package catalog

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// KeepFreshEvery is how often KeepFresh touches the files it keeps: well
// within DefaultGrace, so that a cleanup with the default grace period
// never takes a file still in use for an orphan, however long the write
// or transaction holding it has run.
var KeepFreshEvery = DefaultGrace / 6

// KeepFresh marks the files under dir as in use until stop is called, by
// setting their modification time to the present every KeepFreshEvery.
// DeleteOrphans keeps what was modified within its grace period: a file a
// rewrite wrote and has not registered yet, or one a transaction staged
// and registers at its COMMIT, would otherwise be taken for an orphan once
// it is older than the grace period, and deleted under a commit about to
// name it. A process that dies stops touching its files, which then age
// into orphans as before. stop waits for a touch under way, and may be
// called more than once.
func KeepFresh(dir string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(KeepFreshEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				touchAll(dir, done)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// touchAll sets the modification time of every regular file under dir to
// now; a file that went away is no matter.
func touchAll(dir string, done <-chan struct{}) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		select {
		case <-done:
			return filepath.SkipAll
		default:
		}
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		return nil
	})
}
