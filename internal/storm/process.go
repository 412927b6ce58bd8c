package storm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocklake/rocklake/kv/pgkv"
)

// workerEnv carries a worker's spec (JSON) from Start to MaybeWorker.
const workerEnv = "ROCKLAKE_STORM_WORKER"

const (
	roleWriter = "writer"
	roleReader = "reader"
)

// spec is what one worker process is to do.
type spec struct {
	Role     string        `json:"role"`
	ID       int           `json:"id"`
	Table    string        `json:"table,omitempty"`
	Catalog  string        `json:"catalog"`
	Log      string        `json:"log"`
	Deadline int64         `json:"deadline"` // unix nanoseconds
	Files    int           `json:"files"`
	MaxPause time.Duration `json:"max_pause"`
	Seed     uint64        `json:"seed"`
	Postgres pgkv.Options  `json:"postgres"`
	Parent   int           `json:"parent"`
}

// MaybeWorker runs this process as a storm worker and exits, when it was
// started as one; otherwise it returns at once. A program that starts
// storms (a TestMain, a bench main) calls it before anything else.
func MaybeWorker() {
	raw, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintf(os.Stderr, "storm worker: bad %s: %v\n", workerEnv, err)
		os.Exit(2)
	}
	go watchParent(s.Parent)
	var err error
	switch s.Role {
	case roleWriter:
		err = runWriter(s)
	case roleReader:
		err = runReader(s)
	default:
		err = fmt.Errorf("unknown role %q", s.Role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "storm %s %d: %v\n", s.Role, s.ID, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// watchParent ends the worker when the process that started it is gone,
// so that a storm whose parent died (a test killed by its timeout) stops
// writing instead of running to its deadline unobserved.
func watchParent(parent int) {
	for {
		if os.Getppid() != parent {
			os.Exit(3)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Process is a running worker.
type Process struct {
	Role  string
	ID    int
	Table string // a writer's

	cmd    *exec.Cmd
	out    *os.File
	done   chan struct{}
	err    error
	killed atomic.Bool
}

// Pid is the worker's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL; Wait then reports no error for it.
func (p *Process) Kill() error {
	p.killed.Store(true)
	err := p.cmd.Process.Signal(syscall.SIGKILL)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Done is closed when the worker has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the worker to exit. It fails when the worker exited
// with an error, not when Kill ended it.
func (p *Process) Wait() error {
	<-p.done
	if p.err == nil || p.killed.Load() {
		return nil
	}
	msg, _ := os.ReadFile(p.out.Name())
	return fmt.Errorf("storm %s %d: %v; its output (%s):\n%s", p.Role, p.ID, p.err, p.out.Name(), tailLines(msg, 20))
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func start(cfg Config, s spec) (*Process, error) {
	if _, err := os.Stat(s.Log); err == nil {
		return nil, fmt.Errorf("storm: %s exists: a worker id is used once per directory", s.Log)
	}
	s.Catalog, s.Files, s.MaxPause, s.Seed, s.Postgres = cfg.Catalog, cfg.Files, cfg.MaxPause, cfg.Seed, cfg.Postgres
	s.Parent = os.Getpid()
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out, err := os.Create(strings.TrimSuffix(s.Log, ".jsonl") + ".out")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Executable, cfg.Args...)
	cmd.Env = append(append(os.Environ(), cfg.Env...), workerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("storm: start %s %d: %w", s.Role, s.ID, err)
	}
	p := &Process{Role: s.Role, ID: s.ID, Table: s.Table, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// StartWriter starts one writer with the given id on a table (created if
// missing), running for cfg.Duration. Ids must be unique in cfg.Dir.
func StartWriter(cfg Config, id int, table string) (*Process, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	return start(cfg, spec{Role: roleWriter, ID: id, Table: table, Log: cfg.writerLog(id),
		Deadline: time.Now().Add(cfg.Duration).UnixNano()})
}

// Storm is a running storm.
type Storm struct {
	Writers []*Process
	Readers []*Process
}

// Start prepares the catalog and starts every writer and reader of the
// configuration, all stopping after cfg.Duration.
func Start(cfg Config) (*Storm, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := Prepare(cfg); err != nil {
		return nil, fmt.Errorf("storm: prepare %s: %w", pgkv.Redact(cfg.Catalog), err)
	}
	deadline := time.Now().Add(cfg.Duration).UnixNano()
	st := &Storm{}
	for id := range cfg.SharedWriters + cfg.SoloWriters {
		p, err := start(cfg, spec{Role: roleWriter, ID: id, Table: cfg.tableOf(id), Log: cfg.writerLog(id), Deadline: deadline})
		if err != nil {
			st.Kill()
			return nil, err
		}
		st.Writers = append(st.Writers, p)
	}
	for id := range cfg.Readers {
		p, err := start(cfg, spec{Role: roleReader, ID: id, Log: cfg.readerLog(id), Deadline: deadline})
		if err != nil {
			st.Kill()
			return nil, err
		}
		st.Readers = append(st.Readers, p)
	}
	return st, nil
}

func (s *Storm) all() []*Process { return append(append([]*Process{}, s.Writers...), s.Readers...) }

// Wait waits for every worker and reports those that failed.
func (s *Storm) Wait() error {
	var errs []error
	for _, p := range s.all() {
		if err := p.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Kill ends every worker at once (a test giving up) and waits for them.
func (s *Storm) Kill() {
	var wg sync.WaitGroup
	for _, p := range s.all() {
		wg.Go(func() {
			_ = p.Kill()
			<-p.done
		})
	}
	wg.Wait()
}

// Run starts a storm, waits for it to end, and checks the catalog (also
// when a worker failed: the report says what it left).
func Run(cfg Config) (Report, error) {
	st, err := Start(cfg)
	if err != nil {
		return Report{}, err
	}
	werr := st.Wait()
	rep, err := Check(cfg)
	return rep, errors.Join(werr, err)
}

// logs lists the writer and reader logs in a storm's directory.
func logs(dir string) (writers, readers []string, err error) {
	writers, err = filepath.Glob(filepath.Join(dir, "writer-*.jsonl"))
	if err == nil {
		readers, err = filepath.Glob(filepath.Join(dir, "reader-*.jsonl"))
	}
	return writers, readers, err
}
