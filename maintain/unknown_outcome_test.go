package maintain

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv"
)

// outcomeStore commits a batch and then, once armed, says its outcome is
// unknown (a connection cut after COMMIT was sent) and fails the next
// iterator, the read that would find the commit: the caller cannot tell
// whether it landed. Here it always did.
type outcomeStore struct {
	kv.Store
	armed, failIter atomic.Bool
}

type outcomeBatch struct {
	kv.Batch
	s *outcomeStore
}

func (s *outcomeStore) NewBatch() kv.Batch { return &outcomeBatch{s.Store.NewBatch(), s} }

func (b *outcomeBatch) Commit() error {
	err := b.Batch.Commit()
	if err == nil && b.s.armed.CompareAndSwap(true, false) {
		b.s.failIter.Store(true)
		return fmt.Errorf("%w: the connection was lost after COMMIT was sent", kv.ErrUnknownOutcome)
	}
	return err
}

func (s *outcomeStore) NewIter(lo, hi []byte) (kv.Iterator, error) {
	if s.failIter.CompareAndSwap(true, false) {
		return nil, errors.New("the check read failed")
	}
	return s.Store.NewIter(lo, hi)
}

// A write, change or transaction whose commit's outcome is unknown keeps
// the files it wrote: the commit may have landed, and then its snapshot
// reads them. Before, each removed them, and a landed commit named files
// that were gone: the table could not be read again.
func TestUnknownOutcomeKeepsFiles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, mode string
		run        func(e *engine.Engine) error
		want       string
	}{
		{"insert", "", func(e *engine.Engine) error {
			_, err := Write(ctx, e, "INSERT INTO t VALUES (5)", changeOpts())
			return err
		}, "4|11"},
		{"delete, copy-on-write", catalog.CopyOnWrite, func(e *engine.Engine) error {
			_, err := Write(ctx, e, "DELETE FROM t WHERE x = 2", changeOpts())
			return err
		}, "2|4"},
		{"delete, merge-on-read", catalog.MergeOnRead, func(e *engine.Engine) error {
			_, err := Write(ctx, e, "DELETE FROM t WHERE x = 2", changeOpts())
			return err
		}, "2|4"},
		{"update, merge-on-read", catalog.MergeOnRead, func(e *engine.Engine) error {
			// Delete files and the new rows' files in one commit.
			_, err := Write(ctx, e, "UPDATE t SET x = x * 10 WHERE x = 2", changeOpts())
			return err
		}, "3|24"},
		{"transaction", "", func(e *engine.Engine) error {
			tx := NewTxn(e)
			if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (5)", changeOpts()); err != nil {
				return fmt.Errorf("unexpected: %w", err)
			}
			if _, err := tx.Exec(ctx, "UPDATE t SET x = x * 10 WHERE x = 1", changeOpts()); err != nil {
				return fmt.Errorf("unexpected: %w", err)
			}
			e.Catalog().Store().(*outcomeStore).armed.Store(true)
			_, err := tx.Commit(ctx)
			return err
		}, "4|20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &outcomeStore{Store: kv.NewMemory()}
			c, err := catalog.CreateInStore(st, catalog.Options{DataRoot: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.New(c)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			mustWrite(t, e, "CREATE TABLE t (x BIGINT)")
			if tc.mode != "" {
				alterTable(t, c, "t", "set", "option", "delete_mode", "=", tc.mode)
			}
			mustWrite(t, e, "INSERT INTO t VALUES (1), (2), (3)")
			if tc.name != "transaction" {
				st.armed.Store(true)
			}
			if err := tc.run(e); !errors.Is(err, kv.ErrUnknownOutcome) {
				t.Fatalf("want an unknown outcome, got %v", err)
			}
			if got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM t"); got != tc.want {
				t.Fatalf("after the commit that landed: %s, want %s", got, tc.want)
			}
		})
	}
}

// A write whose commit landed, or may have, is never reported as one
// that committed nothing, even when its table changed meanwhile (which
// makes other failures "run the statement again"): run again, it would
// write its rows twice, and the caller would remove files the landed
// snapshot reads.
func TestLandedWritesAreNotRaced(t *testing.T) {
	_, c, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (x BIGINT)")
	st, err := openTable(c, catalog.Latest, "t")
	if err != nil {
		t.Fatal(err)
	}
	st.r.Close()
	tb, cols := st.t, st.cols
	alterTable(t, c, "t", "add", "column", "y", "INTEGER")
	for _, landed := range []error{
		fmt.Errorf("insert: registering the new files: %w", kv.ErrUnknownOutcome),
		fmt.Errorf("insert: wrote 3 rows but registered 2 at snapshot 9: %w", errLanded),
	} {
		for name, got := range map[string]error{"raced": raced(c, tb, cols, landed), "changeRaced": changeRaced(c, st, landed)} {
			if got != landed {
				t.Errorf("%s(%v) = %v, want the error as it was", name, landed, got)
			}
		}
	}
	// The same table change makes a failure that committed nothing one
	// to run again.
	if got := raced(c, tb, cols, catalog.ErrConflict); !errors.Is(got, ErrWriteRaced) {
		t.Errorf("raced(a conflict, after an ALTER) = %v, want ErrWriteRaced", got)
	}
}
