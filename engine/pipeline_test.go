package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
)

// stage is one of queryRun's steps, in runQuery's order, as a test drives
// them.
type stage struct {
	name string
	run  func(q *queryRun) error
}

// queryStages are runQuery's stages; execute's Rows, if any, go to rows.
func queryStages(rows **Rows) []stage {
	return []stage{
		{"parse", (*queryRun).parse},
		{"plan", (*queryRun).plan},
		{"metadata", func(q *queryRun) error {
			answered, r, err := q.metadata()
			if answered {
				*rows = r
				return errAnswered
			}
			return err
		}},
		{"split", (*queryRun).planSplit},
		{"list", (*queryRun).list},
		{"fetch", (*queryRun).fetch},
		{"check", (*queryRun).check},
		{"bind", (*queryRun).bind},
		{"execute", func(q *queryRun) error {
			_, r, err := q.execute()
			*rows = r
			return err
		}},
	}
}

// errAnswered stops a test's walk through the stages where runQuery
// returns an answer from statistics.
var errAnswered = errors.New("answered from statistics")

func newTestRun(t *testing.T, e *Engine, query string, opts QueryOptions, stream *RowsOptions) *queryRun {
	t.Helper()
	q, err := e.newRun(context.Background(), query, opts, stream, &queryText{user: query, names: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func phaseNames(res *Result) []string {
	var names []string
	for _, p := range res.Phases {
		names = append(names, p.Name)
	}
	return names
}

// TestQueryRunStages walks a join through the stages one at a time and
// checks what each leaves for the next: the references parse finds, the
// views plan makes and the text it rewrites, the files list keeps (the
// plan's, as registered), the SQL bind writes, and execute's rows, which
// are the oracle's.
func TestQueryRunStages(t *testing.T) {
	fx := newShapesFixture(t)
	const query = "SELECT t.id, u.v FROM t JOIN u ON t.id = u.id WHERE t.id BETWEEN 40 AND 60"
	q := newTestRun(t, fx.eng, query, QueryOptions{Snapshot: catalog.Latest}, nil)
	defer q.close()

	if err := q.parse(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ref := range q.scan.refs {
		names = append(names, ref.table.Name)
	}
	if slices.Sort(names); strings.Join(names, ",") != "t,u" {
		t.Fatalf("parse found references to %v, want t and u", names)
	}

	if err := q.plan(); err != nil {
		t.Fatal(err)
	}
	if len(q.views) != 2 || len(q.res.Tables) != 2 {
		t.Fatalf("plan made %d views and %d table plans, want 2 of each", len(q.views), len(q.res.Tables))
	}
	for _, v := range q.views {
		if !strings.Contains(q.rewritten, `"`+v.name+`"`) && !strings.Contains(q.rewritten, v.name) {
			t.Errorf("the rewritten query %q does not read view %s", q.rewritten, v.name)
		}
		if len(v.files) != 0 {
			t.Errorf("view %s has files listed before list: %v", v.name, v.files)
		}
	}
	for _, tp := range q.res.Tables {
		if tp.Table == "t" && tp.Plan.Files.Kept >= tp.Plan.Files.Total {
			t.Errorf("t BETWEEN 40 AND 60 kept %d of %d files", tp.Plan.Files.Kept, tp.Plan.Files.Total)
		}
	}

	if answered, _, err := q.metadata(); err != nil || answered {
		t.Fatalf("metadata answered a join's rows (%v, %v)", answered, err)
	}
	if err := q.planSplit(); err != nil || q.split != nil {
		t.Fatalf("a join was split (%v, %v)", q.split, err)
	}

	if err := q.list(); err != nil {
		t.Fatal(err)
	}
	for _, v := range q.views {
		var kept []string
		for _, k := range v.plan.KeptFiles {
			kept = append(kept, k.Path)
		}
		if !slices.Equal(v.files, kept) {
			t.Errorf("view %s lists %v, its plan kept %v", v.name, v.files, kept)
		}
		for _, f := range v.files {
			if _, ok := q.stamps[f]; !ok {
				t.Errorf("%s has no registration stamp", f)
			}
		}
	}

	for _, s := range []stage{{"fetch", (*queryRun).fetch}, {"check", (*queryRun).check}, {"bind", (*queryRun).bind}} {
		if err := s.run(q); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	for _, v := range q.views {
		if !strings.Contains(q.prefix, "CREATE OR REPLACE TEMP VIEW \""+v.name+"\"") && !strings.Contains(q.prefix, "CREATE OR REPLACE TEMP VIEW "+v.name+" ") {
			t.Errorf("bind's statements do not make view %s:\n%s", v.name, q.prefix)
		}
	}

	res, rows, err := q.execute()
	if err != nil || rows != nil {
		t.Fatalf("execute: %v (rows %v)", err, rows)
	}
	if got, want := phaseNames(res), "parse,plan,bind,execute"; strings.Join(got, ",") != want {
		t.Errorf("phases %v, want %s", got, want)
	}
	want, werr := baseline(t, fx.oracle, query)
	if werr != nil {
		t.Fatal(werr)
	}
	var got []string
	for _, row := range res.Rows {
		got = append(got, rowText(row))
	}
	if !sameRows(got, want, false) {
		t.Errorf("rows %v, DuckDB's %v", head(got), head(want))
	}
}

// TestQueryRunEndsWhereItShould checks the two early ends: an answer from
// statistics ends after metadata with no file listed, and a split
// aggregate's view reads only what its plan did not prove.
func TestQueryRunEndsWhereItShould(t *testing.T) {
	fx := newShapesFixture(t)

	q := newTestRun(t, fx.eng, "SELECT count(*) FROM t", QueryOptions{Snapshot: catalog.Latest}, nil)
	for _, s := range queryStages(new(*Rows))[:2] {
		if err := s.run(q); err != nil {
			t.Fatal(err)
		}
	}
	answered, _, err := q.metadata()
	if err != nil || !answered {
		t.Fatalf("count(*) of a table was not answered from statistics (%v)", err)
	}
	if got := strings.Join(phaseNames(q.res), ","); got != "parse,plan,metadata" {
		t.Errorf("phases %s", got)
	}
	for _, v := range q.views {
		if len(v.files) != 0 {
			t.Errorf("an answer from statistics listed view %s's files", v.name)
		}
	}
	q.close()

	const split = "SELECT count(*) FROM t WHERE id >= 30"
	q = newTestRun(t, fx.eng, split, QueryOptions{Snapshot: catalog.Latest}, nil)
	defer q.close()
	var rows *Rows
	for _, s := range queryStages(&rows)[:4] {
		if err := s.run(q); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if q.split == nil {
		t.Fatalf("%s was not split", split)
	}
	if err := q.list(); err != nil {
		t.Fatal(err)
	}
	v := q.viewByPlan[q.split.orig]
	if v.plan != q.split.rest {
		t.Fatalf("the split view reads its original plan")
	}
	if len(v.files) == 0 || len(v.files) >= q.split.orig.Files.Total {
		t.Errorf("the split view reads %d of the table's %d files: it should read only those statistics did not prove", len(v.files), q.split.orig.Files.Total)
	}
	for _, s := range queryStages(&rows)[5:] {
		if err := s.run(q); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	want, _ := baseline(t, fx.oracle, split)
	if got := rowText(q.res.Rows[0]); len(want) != 1 || got != want[0] {
		t.Errorf("%s: %s, DuckDB's %v", split, got, want)
	}
}

// TestQueryRunGivesBackWhatItHolds stops a run after every stage, read
// into a Result and streamed, and checks the connection went back to the
// pool: a stage that took or swapped one without close knowing would leave
// it in use.
func TestQueryRunGivesBackWhatItHolds(t *testing.T) {
	fx := newShapesFixture(t)
	queries := []string{
		"SELECT t.id, u.v FROM t JOIN u ON t.id = u.id WHERE t.id BETWEEN 40 AND 60",
		"SELECT count(*) FROM t",
		"SELECT count(*) FROM t WHERE id >= 30",
		"SELECT count(*) FROM u POSITIONAL JOIN t WHERE u.id < 20",
	}
	for _, query := range queries {
		for _, stream := range []*RowsOptions{nil, {}} {
			for stop := 0; stop <= len(queryStages(new(*Rows))); stop++ {
				q := newTestRun(t, fx.eng, query, QueryOptions{Snapshot: catalog.Latest}, stream)
				var rows *Rows
				for _, s := range queryStages(&rows)[:stop] {
					if err := s.run(q); errors.Is(err, errAnswered) {
						break
					} else if err != nil {
						t.Fatalf("%s (stream %v): %s: %v", query, stream != nil, s.name, err)
					}
				}
				q.close()
				if rows != nil {
					for rows.Next() {
					}
					rows.Close()
				}
				fx.eng.cleanups.Wait()
				if n := fx.eng.db.Stats().InUse; n != 0 {
					t.Fatalf("%s (stream %v) stopped after %d stages: %d connections still in use", query, stream != nil, stop, n)
				}
			}
		}
	}
}

// TestCheckStageRefusesAChangedFile changes a kept file between list and
// check: the run fails naming it, before DuckDB reads anything.
func TestCheckStageRefusesAChangedFile(t *testing.T) {
	fx := newShapesFixture(t)
	q := newTestRun(t, fx.eng, "SELECT * FROM t WHERE id < 10", QueryOptions{Snapshot: catalog.Latest}, nil)
	defer q.close()
	var rows *Rows
	for _, s := range queryStages(&rows)[:6] {
		if err := s.run(q); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	f := q.views[0].files[0]
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	err := q.check()
	if !errors.Is(err, ErrDataFileChanged) || !strings.Contains(err.Error(), f) {
		t.Fatalf("check after %s changed: %v", f, err)
	}
}
