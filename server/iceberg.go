package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/interop/iceberg"
	"github.com/rocklake/rocklake/storage"
)

// The Iceberg REST catalog, read-only, under /iceberg on the HTTP listener
// (a client's uri is http://host:port/iceberg):
//
//	GET    /iceberg/v1/config                             endpoints served
//	POST   /iceberg/v1/oauth/tokens                       client_credentials: a server token back
//	GET    /iceberg/v1/namespaces                         one namespace, main
//	GET    /iceberg/v1/namespaces/{ns}                    its properties
//	HEAD   /iceberg/v1/namespaces/{ns}                    exists
//	GET    /iceberg/v1/namespaces/{ns}/tables             the tables
//	GET    /iceberg/v1/namespaces/{ns}/tables/{t}         metadata (materialized per content)
//	HEAD   /iceberg/v1/namespaces/{ns}/tables/{t}         exists
//	POST   /iceberg/v1/namespaces/{ns}/tables/{t}/plan    plan with rocklake's planner
//	GET    /iceberg/v1/namespaces/{ns}/tables/{t}/plan/{id}  a plan's result again
//	DELETE /iceberg/v1/namespaces/{ns}/tables/{t}/plan/{id}  forget a plan
//	POST   /iceberg/v1/namespaces/{ns}/tables/{t}/tasks   a plan task's file scan tasks
//
// Writes (create, commit, drop, rename, register) answer 406
// UnsupportedOperationException. Errors are the specification's
// {"error": {"message", "type", "code"}}.

// IcebergNamespace is the one namespace rocklake's tables are in, as in
// the PostgreSQL catalogs (schema main).
const IcebergNamespace = "main"

// icebergTasksPerPage bounds the file scan tasks of one response: a plan
// with more answers the first page and plan tasks for the rest.
var icebergTasksPerPage = 1000

// icebergPlanTTL is how long a plan's tasks can be fetched.
const icebergPlanTTL = 10 * time.Minute

// icebergMaxPlans bounds the plans kept at once; the oldest goes first.
const icebergMaxPlans = 256

type icebergError struct {
	status int
	typ    string
	msg    string
}

func (e *icebergError) Error() string { return e.msg }

func writeIcebergError(w http.ResponseWriter, err error) int {
	var ie *icebergError
	if !errors.As(err, &ie) {
		ae := asAPIError(err)
		typ := "ServiceFailureException"
		switch ae.status {
		case http.StatusBadRequest:
			typ = "BadRequestException"
		case http.StatusUnauthorized:
			typ = "NotAuthorizedException"
		case http.StatusForbidden:
			typ = "ForbiddenException"
		case http.StatusNotFound:
			typ = "NoSuchTableException"
		case http.StatusConflict:
			typ = "CommitFailedException"
		}
		ie = &icebergError{ae.status, typ, ae.msg}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ie.status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": ie.msg, "type": ie.typ, "code": ie.status}})
	return ie.status
}

// icebergPlans are the plans whose tasks clients may still fetch.
type icebergPlans struct {
	mu    sync.Mutex
	plans map[string]*icebergPlan
	order []string
}

type icebergPlan struct {
	table   string
	tasks   []rest.RESTFileScanTask
	deletes []rest.RESTDeleteFile // tasks refer to them by index
	created time.Time
}

func (p *icebergPlans) put(pl *icebergPlan) string {
	var b [12]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plans == nil {
		p.plans = map[string]*icebergPlan{}
	}
	p.expire()
	for len(p.order) >= icebergMaxPlans {
		delete(p.plans, p.order[0])
		p.order = p.order[1:]
	}
	p.plans[id] = pl
	p.order = append(p.order, id)
	return id
}

func (p *icebergPlans) get(id string) (*icebergPlan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire()
	pl, ok := p.plans[id]
	return pl, ok
}

func (p *icebergPlans) drop(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.plans[id]
	delete(p.plans, id)
	for i, o := range p.order {
		if o == id {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	return ok
}

func (p *icebergPlans) expire() {
	now := time.Now()
	for len(p.order) > 0 {
		pl := p.plans[p.order[0]]
		if pl != nil && now.Sub(pl.created) < icebergPlanTTL {
			return
		}
		delete(p.plans, p.order[0])
		p.order = p.order[1:]
	}
}

// icebergRoutes adds the Iceberg REST catalog to the HTTP API's mux.
func (s *Server) icebergRoutes(mux *http.ServeMux) {
	route := func(pattern string, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		name := "iceberg " + pattern[strings.IndexByte(pattern, ' ')+1:]
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			code := s.serveIceberg(w, r, h)
			s.m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
			s.m.requestTime.WithLabelValues(name).Observe(time.Since(start).Seconds())
		})
	}
	const p = "/iceberg/v1"
	route("GET "+p+"/config", s.iceConfig)
	mux.HandleFunc("POST "+p+"/oauth/tokens", s.iceToken)
	route("GET "+p+"/namespaces", s.iceNamespaces)
	route("GET "+p+"/namespaces/{ns}", s.iceNamespace)
	route("HEAD "+p+"/namespaces/{ns}", s.iceNamespace)
	route("GET "+p+"/namespaces/{ns}/tables", s.iceTables)
	route("GET "+p+"/namespaces/{ns}/tables/{table}", s.iceLoadTable)
	route("HEAD "+p+"/namespaces/{ns}/tables/{table}", s.iceTableExists)
	route("POST "+p+"/namespaces/{ns}/tables/{table}/plan", s.icePlan)
	route("GET "+p+"/namespaces/{ns}/tables/{table}/plan/{plan}", s.icePlanResult)
	route("DELETE "+p+"/namespaces/{ns}/tables/{table}/plan/{plan}", s.iceCancelPlan)
	route("POST "+p+"/namespaces/{ns}/tables/{table}/tasks", s.iceTasks)
	refuse := func(w http.ResponseWriter, r *http.Request) (any, error) {
		return nil, &icebergError{http.StatusNotAcceptable, "UnsupportedOperationException",
			fmt.Sprintf("%s %s: rocklake's Iceberg catalog is read-only; write through rocklake (SQL INSERT, rocklake add) instead", r.Method, r.URL.Path)}
	}
	for _, pat := range []string{
		"POST " + p + "/namespaces",
		"DELETE " + p + "/namespaces/{ns}",
		"POST " + p + "/namespaces/{ns}/properties",
		"POST " + p + "/namespaces/{ns}/tables",
		"POST " + p + "/namespaces/{ns}/tables/{table}",
		"DELETE " + p + "/namespaces/{ns}/tables/{table}",
		"POST " + p + "/namespaces/{ns}/register",
		"POST " + p + "/tables/rename",
		"POST " + p + "/transactions/commit",
	} {
		route(pat, refuse)
	}
	// Metrics reports are accepted and dropped: clients send them after
	// scans, and a refusal would only fill their logs.
	route("POST "+p+"/namespaces/{ns}/tables/{table}/metrics", func(w http.ResponseWriter, r *http.Request) (any, error) {
		w.WriteHeader(http.StatusNoContent)
		return nil, nil
	})
}

func (s *Server) serveIceberg(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request) (any, error)) int {
	if err := s.authorize(r, Reader); err != nil {
		return writeIcebergError(w, err)
	}
	v, err := h(w, r)
	if err != nil {
		return writeIcebergError(w, err)
	}
	if v == nil {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent
		}
		return http.StatusNoContent
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
	return http.StatusOK
}

// iceToken answers OAuth2's client_credentials grant with the client
// secret itself when it is one of the server's tokens: clients that insist
// on OAuth2 get the bearer token they would have been given.
func (s *Server) iceToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, "invalid_request", "the body is not a form")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		writeOAuthError(w, "unsupported_grant_type", "only client_credentials is served")
		return
	}
	secret := r.PostForm.Get("client_secret")
	if secret == "" {
		if _, pw, ok := r.BasicAuth(); ok {
			secret = pw
		}
	}
	if s.cfg.Auth != nil {
		if _, ok := s.cfg.Auth.token(secret); !ok {
			s.m.authFailures.Inc()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "the client secret is not one of the server's tokens"})
			return
		}
	} else if secret == "" {
		secret = "trust"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": secret, "token_type": "bearer", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

func writeOAuthError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": msg})
}

func (s *Server) iceConfig(_ http.ResponseWriter, r *http.Request) (any, error) {
	const p = "/v1/{prefix}/namespaces"
	return map[string]any{
		"defaults":  map[string]string{},
		"overrides": map[string]string{},
		"endpoints": []string{
			"GET " + p,
			"GET " + p + "/{namespace}",
			"HEAD " + p + "/{namespace}",
			"GET " + p + "/{namespace}/tables",
			"GET " + p + "/{namespace}/tables/{table}",
			"HEAD " + p + "/{namespace}/tables/{table}",
			"POST " + p + "/{namespace}/tables/{table}/plan",
			"GET " + p + "/{namespace}/tables/{table}/plan/{plan-id}",
			"DELETE " + p + "/{namespace}/tables/{table}/plan/{plan-id}",
			"POST " + p + "/{namespace}/tables/{table}/tasks",
			"POST " + p + "/{namespace}/tables/{table}/metrics",
		},
	}, nil
}

func (s *Server) iceNamespaces(_ http.ResponseWriter, r *http.Request) (any, error) {
	if parent := r.URL.Query().Get("parent"); parent != "" {
		if parent != IcebergNamespace {
			return nil, noSuchNamespace(parent)
		}
		return map[string]any{"namespaces": [][]string{}}, nil
	}
	return map[string]any{"namespaces": [][]string{{IcebergNamespace}}}, nil
}

func noSuchNamespace(ns string) error {
	return &icebergError{http.StatusNotFound, "NoSuchNamespaceException", fmt.Sprintf("namespace %q does not exist: rocklake's tables are in namespace %q", ns, IcebergNamespace)}
}

func (s *Server) namespaceOf(r *http.Request) error {
	ns, err := url.PathUnescape(r.PathValue("ns"))
	if err != nil {
		ns = r.PathValue("ns")
	}
	if ns != IcebergNamespace {
		return noSuchNamespace(strings.ReplaceAll(ns, "\x1f", "."))
	}
	return nil
}

func (s *Server) iceNamespace(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	if r.Method == http.MethodHead {
		return nil, nil
	}
	return map[string]any{"namespace": []string{IcebergNamespace}, "properties": map[string]string{}}, nil
}

func (s *Server) iceTables(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	tables, err := s.lake.Tables(r.Context(), rocklake.ReadOptions{})
	if err != nil {
		return nil, err
	}
	ids := make([]map[string]any, 0, len(tables))
	for _, t := range tables {
		ids = append(ids, map[string]any{"namespace": []string{IcebergNamespace}, "name": t.Name})
	}
	return map[string]any{"identifiers": ids}, nil
}

func noSuchTable(name string, err error) error {
	return &icebergError{http.StatusNotFound, "NoSuchTableException", fmt.Sprintf("table %s.%s does not exist: %v", IcebergNamespace, name, err)}
}

// read opens a catalog reader at a snapshot (catalog.Latest for the
// newest).
func (s *Server) icebergReader(snap int64) (*catalog.Reader, error) {
	r, err := s.lake.Catalog().Read(snap)
	if err != nil {
		if errors.Is(err, rocklake.ErrNoSuchSnapshot) {
			return nil, &icebergError{http.StatusNotFound, "NoSuchSnapshotException", err.Error()}
		}
		return nil, err
	}
	return r, nil
}

func (s *Server) icebergTable(r *http.Request, snap int64) (*catalog.Reader, *iceberg.Table, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, nil, err
	}
	name := r.PathValue("table")
	id := int64(-1)
	if snap != catalog.Latest {
		// The table the client loaded is the one of that name now; at an
		// earlier snapshot it may have had another name, and the name
		// another table.
		latest, err := s.icebergReader(catalog.Latest)
		if err != nil {
			return nil, nil, err
		}
		tb, err := latest.Table(name)
		latest.Close()
		if err != nil {
			if errors.Is(err, rocklake.ErrNoSuchTable) {
				return nil, nil, noSuchTable(name, err)
			}
			return nil, nil, err
		}
		id = tb.ID
	}
	cr, err := s.icebergReader(snap)
	if err != nil {
		return nil, nil, err
	}
	if id >= 0 {
		at, err := iceberg.NameAt(cr, id)
		if err != nil {
			cr.Close()
			return nil, nil, &icebergError{http.StatusBadRequest, "BadRequestException", fmt.Sprintf("table %s has no version at snapshot %d: %v", name, snap, err)}
		}
		name = at
	}
	t, err := iceberg.Load(cr, name)
	if err != nil {
		cr.Close()
		switch {
		case errors.Is(err, rocklake.ErrNoSuchTable):
			return nil, nil, noSuchTable(name, err)
		case errors.Is(err, iceberg.ErrNotShown):
			return nil, nil, &icebergError{http.StatusBadRequest, "BadRequestException", err.Error()}
		}
		return nil, nil, err
	}
	return cr, t, nil
}

func (s *Server) iceTableExists(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	name := r.PathValue("table")
	if _, err := s.lake.Describe(r.Context(), name, rocklake.ReadOptions{}); err != nil {
		if errors.Is(err, rocklake.ErrNoSuchTable) {
			return nil, noSuchTable(name, err)
		}
		return nil, err
	}
	return nil, nil
}

func (s *Server) iceLoadTable(_ http.ResponseWriter, r *http.Request) (any, error) {
	if s.cfg.IcebergDir == "" {
		return nil, &icebergError{http.StatusNotAcceptable, "UnsupportedOperationException", "this server writes no Iceberg metadata (serve with --iceberg-dir)"}
	}
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	cr, err := s.icebergReader(catalog.Latest)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	name := r.PathValue("table")
	tb, err := cr.Table(name)
	if err != nil {
		if errors.Is(err, rocklake.ErrNoSuchTable) {
			return nil, noSuchTable(name, err)
		}
		return nil, err
	}
	md, err := s.icebergMetadata(r.Context(), cr, tb)
	if err != nil {
		if errors.Is(err, iceberg.ErrNotShown) {
			return nil, &icebergError{http.StatusBadRequest, "BadRequestException", err.Error()}
		}
		return nil, err
	}
	return map[string]any{"metadata-location": md.Location, "metadata": md.Metadata, "config": map[string]string{}}, nil
}

// icebergMetadata materializes a table's metadata, each version once, one
// writer at a time per server: others wait and read what it wrote.
func (s *Server) icebergMetadata(ctx context.Context, cr *catalog.Reader, tb catalog.Table) (*iceberg.Metadata, error) {
	s.iceMu.Lock()
	defer s.iceMu.Unlock()
	o := iceberg.Options{History: s.cfg.IcebergHistory, Objects: s.icebergObjects}
	return iceberg.Materialize(ctx, s.lake.Catalog(), cr, tb, s.cfg.IcebergDir, o)
}

// icebergObjects is the object store the metadata of tables of objects is
// written to: made from the environment once (under iceMu), as the
// engine reads objects.
func (s *Server) icebergObjects() (*storage.S3, error) {
	if s.iceS3 == nil {
		st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
		if err != nil {
			return nil, err
		}
		s.iceS3 = st
	}
	return s.iceS3, nil
}

func (s *Server) icePlan(_ http.ResponseWriter, r *http.Request) (any, error) {
	var req rest.PlanTableScanRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, &icebergError{http.StatusBadRequest, "BadRequestException", err.Error()}
	}
	snap := int64(catalog.Latest)
	if req.SnapshotID != nil {
		snap = *req.SnapshotID
	}
	cr, t, err := s.icebergTable(r, snap)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	caseSensitive := req.CaseSensitive == nil || *req.CaseSensitive
	scan, err := iceberg.PlanScanOf(cr, t, req.Filter, caseSensitive)
	if err != nil {
		return nil, &icebergError{http.StatusBadRequest, "BadRequestException", err.Error()}
	}
	s.m.plans.Inc()
	residual := []byte(req.Filter)
	if len(residual) == 0 {
		residual = nil
	}
	tasks := make([]rest.RESTFileScanTask, 0, len(scan.Plan.KeptFiles))
	var deletes []rest.RESTDeleteFile
	for _, f := range scan.Plan.KeptFiles {
		df := &rest.RESTDataFile{RESTContentFile: rest.RESTContentFile{
			SpecID: 0, Partition: []json.RawMessage{}, Content: "data", FilePath: f.Path, FileFormat: "PARQUET",
			FileSizeInBytes: f.Bytes, RecordCount: f.Rows,
		}}
		task := rest.RESTFileScanTask{DataFile: df}
		if d, ok := t.DeleteFile(f.FileID); ok {
			ref := f.Path
			deletes = append(deletes, rest.RESTDeleteFile{RESTContentFile: rest.RESTContentFile{
				SpecID: 0, Partition: []json.RawMessage{}, Content: "position-deletes", FilePath: d.FilePath(), FileFormat: "PARQUET",
				FileSizeInBytes: d.FileSizeBytes(), RecordCount: d.Count(),
			}, ReferencedDataFile: &ref})
			task.DeleteFileReferences = []int{len(deletes) - 1}
		}
		// The client's filter, even where rocklake finds every row of the
		// file matches: its translation may keep more rows than the filter
		// (terms it cannot say, NULLs kept by not-equal), so "true" would
		// return those.
		if residual != nil {
			task.ResidualFilter = residual
		}
		tasks = append(tasks, task)
	}
	pl := &icebergPlan{table: r.PathValue("table"), tasks: tasks, deletes: deletes, created: time.Now()}
	id := s.icePlans.put(pl)
	out := rest.PlanTableScanResponse{Status: rest.PlanStatusCompleted, PlanID: &id}
	out.ScanTasks = pl.page(id, 0)
	return out, nil
}

// page is the tasks from offset on, one page of them, with a plan task
// for the rest.
func (pl *icebergPlan) page(id string, offset int) rest.ScanTasks {
	end := min(len(pl.tasks), offset+icebergTasksPerPage)
	st := rest.ScanTasks{}
	// A page holds the delete files its tasks refer to, renumbered: the
	// references are indexes into one response's delete-files, and every
	// delete file listed must be referred to.
	for _, task := range pl.tasks[offset:end] {
		if len(task.DeleteFileReferences) > 0 {
			d := pl.deletes[task.DeleteFileReferences[0]]
			st.DeleteFiles = append(st.DeleteFiles, d)
			task.DeleteFileReferences = []int{len(st.DeleteFiles) - 1}
		}
		st.FileScanTasks = append(st.FileScanTasks, task)
	}
	if end < len(pl.tasks) {
		st.PlanTasks = []string{fmt.Sprintf("%s.%d", id, end)}
	}
	if st.FileScanTasks == nil {
		st.FileScanTasks = []rest.RESTFileScanTask{}
	}
	return st
}

func (s *Server) icePlanResult(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	id := r.PathValue("plan")
	pl, ok := s.icePlans.get(id)
	if !ok || pl.table != r.PathValue("table") {
		return nil, noSuchPlan(id)
	}
	return rest.CompletedPlanningResult{Status: rest.PlanStatusCompleted, ScanTasks: pl.page(id, 0)}, nil
}

func noSuchPlan(id string) error {
	return &icebergError{http.StatusNotFound, "NoSuchPlanIdException", fmt.Sprintf("plan %q is not known: it expired (plans are kept %s) or was never made; plan again", id, icebergPlanTTL)}
}

func (s *Server) iceCancelPlan(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	s.icePlans.drop(r.PathValue("plan"))
	return nil, nil
}

func (s *Server) iceTasks(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.namespaceOf(r); err != nil {
		return nil, err
	}
	var req struct {
		PlanTask string `json:"plan-task"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, &icebergError{http.StatusBadRequest, "BadRequestException", err.Error()}
	}
	id, off, ok := strings.Cut(req.PlanTask, ".")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 {
		return nil, &icebergError{http.StatusBadRequest, "BadRequestException", fmt.Sprintf("plan-task %q is not one this server gave", req.PlanTask)}
	}
	pl, found := s.icePlans.get(id)
	if !found || pl.table != r.PathValue("table") {
		return nil, &icebergError{http.StatusNotFound, "NoSuchPlanTaskException", fmt.Sprintf("plan task %q is not known: its plan expired (plans are kept %s); plan again", req.PlanTask, icebergPlanTTL)}
	}
	if n > len(pl.tasks) {
		return nil, &icebergError{http.StatusBadRequest, "BadRequestException", fmt.Sprintf("plan-task %q is not one this server gave", req.PlanTask)}
	}
	return pl.page(id, n), nil
}
