package catalog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Leases: a rewrite directory in use.
//
// A write stages its files in a rewrite directory and registers them at
// its commit, which may come long after they were written: a transaction
// held open for hours, an optimize of a large table. Orphan cleanup must
// not take those files for a killed write's, whatever their age. So the
// writer keeps a lease in the directory from its creation until its files
// are committed or removed:
//
//	<rewrite dir>/
//	    .rocklake-rewrite    the marker: rocklake made this directory
//	    .rocklake-in-use     the lease: "host=<name> pid=<n> … token=<hex>",
//	                         its modification time refreshed every
//	                         LeaseRefresh; the token tells it from the
//	                         lease of another write that later makes a
//	                         directory of the same name
//	    part-00000.parquet
//
// DeleteOrphans leaves a directory alone while its lease is live: modified
// within LeaseExpiry, and not written by a process of this host that has
// died (the check that frees a killed writer's files at once rather than
// after the expiry). A lease that is not live is deleted first, then the
// fence is moved, then the files; a commit checks its leases after reading
// the head (Txn.Hold), so that a writer that stalled past its lease's
// expiry either sees its lease gone or loses the fence to the deletion,
// and fails (ErrLeaseLost) instead of registering files that are gone.
// Only the lease's time changes, never a data file's: registration records
// the files' modification times and every read checks them.

// LeaseFile is the name of a rewrite directory's lease.
const LeaseFile = ".rocklake-in-use"

// LeaseRefresh is how often a held lease's time is renewed, and
// LeaseExpiry how long after its last renewal a lease no longer keeps its
// directory (its holder stopped, or lives on another host and stalled).
// Variables so that tests can shorten them.
var (
	LeaseRefresh = 20 * time.Second
	LeaseExpiry  = 5 * time.Minute
)

// leasesChecked, when set (by tests), runs in a commit right after its
// leases were found in place: where an orphan cleanup of another process
// may come in.
var leasesChecked func()

// ErrLeaseLost is a commit of files whose directory's lease orphan cleanup
// took: the files are gone, or going.
var ErrLeaseLost = errors.New("the lease on the written files' directory was lost")

// Lease is a held lease on a rewrite directory, renewed by a goroutine of
// its own until Release.
type Lease struct {
	path string
	// body is what a lease file holds, with a token no other lease has:
	// Release deletes the file only while it still holds it. A write that
	// removes its directory before releasing leaves the name free, and
	// another write that read the same snapshot takes the same name and
	// puts its own lease there; deleting that one by its path would make
	// the other write's commit fail for a lease it never lost. (Not the
	// file's identity: a freed inode number is given again at once.)
	body []byte
	// obj is set on a lease on an object prefix (objectlease.go); path is
	// then its lease object's location.
	obj  *objectLease
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// TakeLease writes dir's lease and keeps it until Release.
func TakeLease(dir string) (*Lease, error) {
	p := filepath.Join(dir, LeaseFile)
	var token [12]byte
	rand.Read(token[:])
	body := "rocklake is writing into this directory; cleanup --orphans leaves it alone while this file is renewed\n" +
		self().String() + " token=" + hex.EncodeToString(token[:]) + "\n"
	// Written whole under another name, then renamed: a writer killed
	// while writing leaves no lease that names nobody (which would keep
	// its directory until the expiry), only a temporary file, an orphan
	// like its part files (leaseTmpName).
	tmp := filepath.Join(dir, fmt.Sprintf("%s.%d.tmp", LeaseFile, os.Getpid()))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("lease on %s: %w", dir, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("lease on %s: %w", dir, err)
	}
	l := &Lease{path: p, body: []byte(body), stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(LeaseRefresh)
	return l, nil
}

func (l *Lease) renew(every time.Duration) {
	defer close(l.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-tick.C:
			if l.obj != nil {
				l.obj.renewed(l.obj.put())
				continue
			}
			// Chtimes, never a write: a lease cleanup deleted stays
			// deleted, and the holder's commit finds it gone.
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

// Release stops renewing the lease and deletes it. It is safe to call more
// than once, and on nil.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		if l.obj != nil {
			ctx, cancel := context.WithTimeout(l.obj.ctx, objectTimeout)
			defer cancel()
			_ = l.obj.store.Delete(ctx, l.path)
			return
		}
		if b, err := os.ReadFile(l.path); err == nil && bytes.Equal(b, l.body) {
			os.Remove(l.path)
		}
	})
}

// Check reports ErrLeaseLost when the lease file is gone (nil for a nil
// lease).
func (l *Lease) Check() error {
	if l == nil {
		return nil
	}
	if l.obj != nil {
		return l.obj.check()
	}
	// Read, not only looked up: on a shared file system, opening asks the
	// server again where a lookup may answer from a cache. And a lease of
	// another write in its place is not this one's: cleanup took this
	// write's directory, and another write made one of the same name.
	b, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !bytes.Equal(b, l.body)):
		return fmt.Errorf("%w: %s was deleted (cleanup --orphans found it older than %s): nothing was committed, run the write again", ErrLeaseLost, filepath.Dir(l.path), LeaseExpiry)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrLeaseLost, err)
	}
	return nil
}

// Hold makes the commit fail with ErrLeaseLost, writing nothing, when
// one of these leases is gone by the time the commit has read the newest
// state.
func (t *Txn) Hold(ls ...*Lease) {
	for _, l := range ls {
		if l != nil {
			t.leases = append(t.leases, l)
		}
	}
}

// leaseLive reports whether dir's lease keeps it from orphan cleanup at
// now, and whether there is a lease file at all.
func leaseLive(dir string, now time.Time) (live, present bool) {
	p := filepath.Join(dir, LeaseFile)
	st, err := os.Lstat(p)
	if err != nil {
		// A lease that cannot be looked at keeps the directory: only one
		// known to be missing does not.
		return !errors.Is(err, fs.ErrNotExist), !errors.Is(err, fs.ErrNotExist)
	}
	if now.Sub(st.ModTime()) > LeaseExpiry {
		return false, true
	}
	h, ok := leaseHolder(p)
	if !ok || !self().sameProcessSpace(h) {
		// Nobody named, or a process this one cannot look at: its lease
		// lasts until its expiry.
		return true, true
	}
	return processAlive(h.pid, h.start), true
}

// holder is the process a lease names: its host, its id and start time,
// and, on Linux, the boot and the process-id namespace they belong to.
type holder struct {
	host, start, boot, pidns string
	pid                      int
}

// self is this process as a lease names it: read once, as none of it
// changes while the process runs, and leases are taken on every write.
var self = sync.OnceValue(func() holder {
	h := holder{pid: os.Getpid()}
	h.host, _ = os.Hostname()
	h.start, _ = processStart(h.pid)
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h.boot = strings.TrimSpace(string(b))
	}
	h.pidns, _ = os.Readlink("/proc/self/ns/pid")
	return h
})

func (h holder) String() string {
	s := fmt.Sprintf("host=%s pid=%d", h.host, h.pid)
	for _, kv := range [][2]string{{"start", h.start}, {"boot", h.boot}, {"pidns", h.pidns}} {
		if kv[1] != "" && !strings.ContainsAny(kv[1], " \t\n") {
			s += " " + kv[0] + "=" + kv[1]
		}
	}
	return s
}

// sameProcessSpace reports whether a process id o names means the same
// process here: the same host name, and where both know them, the same
// boot and process-id namespace (a container sharing the host's name
// numbers its processes apart; two machines may share a name).
func (h holder) sameProcessSpace(o holder) bool {
	if h.host == "" || h.host != o.host {
		return false
	}
	if h.boot != "" && o.boot != "" && h.boot != o.boot {
		return false
	}
	return h.pidns == "" || o.pidns == "" || h.pidns == o.pidns
}

// leaseHolder reads the process a lease file names.
func leaseHolder(p string) (holder, bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return holder{}, false
	}
	return parseHolder(string(b))
}

// parseHolder reads the process a lease's text names.
func parseHolder(text string) (holder, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		var h holder
		pid := ""
		for _, field := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "host":
				h.host = v
			case "pid":
				pid = v
			case "start":
				h.start = v
			case "boot":
				h.boot = v
			case "pidns":
				h.pidns = v
			}
		}
		if h.host != "" && pid != "" {
			n, err := strconv.Atoi(pid)
			h.pid = n
			return h, err == nil && n > 0
		}
	}
	return holder{}, false
}

// processAlive reports whether the process with this id that started at
// start ("" where unknown) runs on this host. Process ids are reused (a
// host's range may be as small as 32,768, threads drawing from it too):
// where /proc tells the start time, a process of the id that started at
// another time is another process. Elsewhere an id reused reads as
// alive, and the lease then lasts until its expiry, as another host's.
func processAlive(pid int, start string) bool {
	if now, ok := processStart(pid); ok {
		return start == "" || now == start
	}
	// No /proc entry to read (none here, or hidden from this user): the
	// kernel still says whether the id is taken, and a process of
	// another user answers "not permitted".
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || !errors.Is(err, os.ErrProcessDone)
}

// processStart is a process's start time as /proc/<pid>/stat gives it
// (clock ticks since boot: field 22, counted past the command's closing
// parenthesis, since a command may hold spaces and parentheses).
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", false
	}
	return fields[19], true
}
