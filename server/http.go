package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/pqmeta"
)

// The HTTP API, JSON in and out:
//
//	GET  /healthz                         the process is up
//	GET  /readyz                          the catalog answers (503 while starting or stopping)
//	GET  /metrics                         Prometheus metrics
//	GET  /v1/snapshots                    every snapshot
//	GET  /v1/tables[?snapshot=N]          the tables (rocklake table list's JSON)
//	GET  /v1/tables/{t}[?snapshot=N]      a table's definition (table describe's)
//	GET  /v1/tables/{t}/stats[?snapshot=N][&column=C]
//	                                      its statistics (rocklake stats's JSON;
//	                                      with column, that column in every file)
//	POST /v1/tables/{t}/plan              {"predicate", "snapshot", "pages", "page_size", "page_token"}
//	POST /v1/tables/{t}/files             {"paths", "create"}: register files (writer role)
//	POST /v1/sql                          {"sql"}: run one write statement (writer role): INSERT,
//	                                      CREATE TABLE [AS], COPY t FROM 'path'; answers {"statement",
//	                                      "table", "rows", "file_count", "snapshot_id"}. Queries go
//	                                      through the PostgreSQL protocol.
//
// Errors are {"error": {"code", "message"}} with a fitting status.
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	// route serves pattern; params are the query parameters it takes:
	// any other, or one given twice, is refused rather than ignored.
	route := func(pattern string, role Role, params []string, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
		name := pattern[strings.IndexByte(pattern, ' ')+1:]
		checked := func(w http.ResponseWriter, r *http.Request) (any, error) {
			if err := onlyParams(r, params); err != nil {
				return nil, err
			}
			return h(w, r)
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			code := s.serveJSON(w, r, role, checked)
			s.m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
			s.m.requestTime.WithLabelValues(name).Observe(time.Since(start).Seconds())
		})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		if _, err := s.latestSnapshot(); err != nil {
			http.Error(w, "catalog unavailable\n", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	snapshot := []string{"snapshot"}
	route("GET /v1/snapshots", Reader, nil, s.apiSnapshots)
	route("GET /v1/tables", Reader, snapshot, s.apiTables)
	route("GET /v1/tables/{table}", Reader, snapshot, s.apiDescribe)
	route("GET /v1/tables/{table}/stats", Reader, []string{"snapshot", "column"}, s.apiStats)
	route("POST /v1/tables/{table}/plan", Reader, nil, s.apiPlan)
	route("POST /v1/tables/{table}/files", Writer, nil, s.apiAdd)
	route("POST /v1/sql", Writer, nil, s.apiSQL)
	s.icebergRoutes(mux)
	return jsonMisses(mux)
}

// jsonMisses answers a path the API does not have (404) and a method a
// path does not take (405, with the Allow header the mux sets) in the
// API's error shape instead of the mux's plain text.
func jsonMisses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		miss := &missWriter{header: http.Header{}}
		mux.ServeHTTP(miss, r)
		if allow := miss.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		iceberg := strings.HasPrefix(r.URL.Path, "/iceberg/")
		switch miss.status {
		case http.StatusMethodNotAllowed:
			if iceberg {
				writeIcebergError(w, &icebergError{miss.status, "BadRequestException", fmt.Sprintf("%s %s: the path takes %s", r.Method, r.URL.Path, miss.header.Get("Allow"))})
				return
			}
			writeError(w, &apiError{miss.status, "method_not_allowed", fmt.Sprintf("%s %s: the path takes %s", r.Method, r.URL.Path, miss.header.Get("Allow"))})
		case http.StatusNotFound, 0:
			if iceberg {
				writeIcebergError(w, &icebergError{http.StatusNotFound, "NotFoundException", fmt.Sprintf("%s %s: no such path in the Iceberg REST catalog (see GET /iceberg/v1/config)", r.Method, r.URL.Path)})
				return
			}
			writeError(w, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("%s %s: no such path in the API (see GET /v1/tables, /v1/snapshots)", r.Method, r.URL.Path)})
		default: // a redirect the mux makes (a path to clean, say): as it is
			for k, v := range miss.header {
				w.Header()[k] = v
			}
			w.WriteHeader(miss.status)
		}
	})
}

// missWriter keeps the status and headers the mux gives a request no
// pattern matched, and drops its plain-text body.
type missWriter struct {
	header http.Header
	status int
}

func (m *missWriter) Header() http.Header { return m.header }
func (m *missWriter) Write(b []byte) (int, error) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	return len(b), nil
}
func (m *missWriter) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
	}
}

// apiError is an error with its HTTP status and a stable code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, need Role, h func(http.ResponseWriter, *http.Request) (any, error)) int {
	if err := s.authorize(r, need); err != nil {
		return writeError(w, err)
	}
	v, err := h(w, r)
	if err != nil {
		return writeError(w, err)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // the CLI's JSON, byte for byte: <, > and & as they are
	enc.Encode(v)
	return http.StatusOK
}

// authorize checks the bearer token against the role a route needs.
// Without an auth file every loopback client is a writer (New refused to
// listen beyond loopback).
func (s *Server) authorize(r *http.Request, need Role) error {
	if s.cfg.Auth == nil || r.Context().Value(trustedKey{}) != nil {
		return nil
	}
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" {
		s.m.authFailures.Inc()
		return &apiError{http.StatusUnauthorized, "unauthenticated", "an Authorization: Bearer token is required"}
	}
	t, ok := s.cfg.Auth.token(secret)
	if !ok {
		s.m.authFailures.Inc()
		return &apiError{http.StatusUnauthorized, "unauthenticated", "the bearer token is not valid"}
	}
	if need == Writer && t.Role != Writer {
		return &apiError{http.StatusForbidden, "forbidden", fmt.Sprintf("token %q is a %s; this needs a writer", t.Name, t.Role)}
	}
	return nil
}

func writeError(w http.ResponseWriter, err error) int {
	ae := asAPIError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"error": map[string]string{"code": ae.code, "message": ae.msg}})
	return ae.status
}

func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	switch {
	case errors.Is(err, rocklake.ErrNoSuchTable), errors.Is(err, rocklake.ErrNoSuchSnapshot):
		return &apiError{http.StatusNotFound, "not_found", msg}
	case errors.Is(err, rocklake.ErrConflict):
		return &apiError{http.StatusConflict, "conflict", msg}
	case errors.Is(err, rocklake.ErrOutsideRoot), errors.Is(err, rocklake.ErrOutsideReadDirs), errors.Is(err, rocklake.ErrSchemaMismatch), errors.Is(err, rocklake.ErrInvalid),
		errors.Is(err, rocklake.ErrNoSuchColumn), errors.Is(err, rocklake.ErrDuplicate),
		// A path the caller named that is missing, not a regular file or
		// not Parquet is the request's fault, not the server's.
		errors.Is(err, fs.ErrNotExist), errors.Is(err, pqmeta.ErrNotRegular), errors.Is(err, pqmeta.ErrNotParquet),
		errors.Is(err, pqmeta.ErrTruncated), errors.Is(err, pqmeta.ErrCorruptFooter):
		return &apiError{http.StatusBadRequest, "invalid", msg}
	case errors.Is(err, rocklake.ErrReadOnly):
		return &apiError{http.StatusForbidden, "read_only", msg}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusServiceUnavailable, "cancelled", msg}
	}
	return &apiError{http.StatusInternalServerError, "internal", msg}
}

// onlyParams refuses a query parameter a path does not take (a typo
// would otherwise be ignored: stats?colum=x answering every column) and
// one given twice.
func onlyParams(r *http.Request, params []string) error {
	for k, vs := range r.URL.Query() {
		if !slices.Contains(params, k) {
			takes := "no query parameters"
			if len(params) > 0 {
				takes = "only " + strings.Join(params, ", ")
			}
			return &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("query parameter %q: %s %s takes %s", k, r.Method, r.URL.Path, takes)}
		}
		if len(vs) > 1 {
			return &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("query parameter %q given %d times", k, len(vs))}
		}
	}
	return nil
}

func snapshotParam(r *http.Request) (rocklake.SnapshotRef, error) {
	v := r.URL.Query().Get("snapshot")
	if v == "" || v == "latest" {
		return rocklake.SnapshotRef{}, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 0 {
		return rocklake.SnapshotRef{}, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("snapshot must be a snapshot id or latest, not %q", v)}
	}
	return rocklake.AtSnapshot(id), nil
}

func (s *Server) apiSnapshots(_ http.ResponseWriter, r *http.Request) (any, error) {
	snaps, err := s.lake.Snapshots(r.Context())
	if err != nil {
		return nil, err
	}
	return map[string]any{"snapshots": snaps}, nil
}

func (s *Server) apiTables(_ http.ResponseWriter, r *http.Request) (any, error) {
	at, err := snapshotParam(r)
	if err != nil {
		return nil, err
	}
	return s.lake.TableList(r.Context(), rocklake.ReadOptions{Snapshot: at})
}

func (s *Server) apiDescribe(_ http.ResponseWriter, r *http.Request) (any, error) {
	at, err := snapshotParam(r)
	if err != nil {
		return nil, err
	}
	return s.lake.Description(r.Context(), r.PathValue("table"), rocklake.ReadOptions{Snapshot: at})
}

func (s *Server) apiStats(_ http.ResponseWriter, r *http.Request) (any, error) {
	at, err := snapshotParam(r)
	if err != nil {
		return nil, err
	}
	return s.lake.StatsOf(r.Context(), r.PathValue("table"), rocklake.StatsOptions{ReadOptions: rocklake.ReadOptions{Snapshot: at}, Column: r.URL.Query().Get("column")})
}

// planRequest is the body of a plan call.
type planRequest struct {
	Predicate string `json:"predicate"`
	Snapshot  *int64 `json:"snapshot"`
	Pages     bool   `json:"pages"`
	// PageSize bounds the kept files in one answer (default 1,000, at most
	// 100,000); PageToken, from the previous answer's next_page_token,
	// asks for the next ones. Every page is planned at the snapshot of the
	// first, which the token carries.
	PageSize  int    `json:"page_size"`
	PageToken string `json:"page_token"`
}

// planPage is a plan with one page of its kept files.
type planPage struct {
	*rocklake.Plan
	NextPageToken string `json:"next_page_token,omitempty"`
}

const maxPlanPage = 100_000

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{http.StatusBadRequest, "invalid", "request body: " + err.Error()}
	}
	return nil
}

func (s *Server) apiPlan(_ http.ResponseWriter, r *http.Request) (any, error) {
	var req planRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Predicate == "" {
		req.Predicate = "true"
	}
	size := req.PageSize
	switch {
	case size == 0:
		size = 1000
	case size < 0 || size > maxPlanPage:
		return nil, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("page_size must be between 1 and %d", maxPlanPage)}
	}
	at := rocklake.SnapshotRef{}
	if req.Snapshot != nil {
		at = rocklake.AtSnapshot(*req.Snapshot)
	}
	offset := 0
	if req.PageToken != "" {
		snap, off, err := parsePageToken(req.PageToken)
		if err != nil {
			return nil, err
		}
		at, offset = rocklake.AtSnapshot(snap), off
	}
	p, err := s.lake.Plan(r.Context(), r.PathValue("table"), req.Predicate, rocklake.PlanOptions{Snapshot: at, Pages: req.Pages})
	if err != nil {
		if ae := asAPIError(err); ae.status == http.StatusInternalServerError {
			// A predicate that does not parse or bind is the caller's.
			return nil, &apiError{http.StatusBadRequest, "invalid", err.Error()}
		}
		return nil, err
	}
	s.m.plans.Inc()
	out := planPage{Plan: p}
	total := len(p.KeptFiles)
	offset = min(offset, total)
	end := min(total, offset+size)
	p.KeptFiles = p.KeptFiles[offset:end]
	if end < total {
		out.NextPageToken = fmt.Sprintf("%d.%d", p.Snapshot, end)
	}
	return out, nil
}

func parsePageToken(t string) (int64, int, error) {
	a, b, ok := strings.Cut(t, ".")
	snap, err1 := strconv.ParseInt(a, 10, 64)
	off, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || snap < 0 || off < 0 {
		return 0, 0, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("page_token %q is not one this server gave", t)}
	}
	return snap, off, nil
}

type addRequest struct {
	Paths  []string `json:"paths"`
	Create bool     `json:"create"`
}

func (s *Server) apiAdd(_ http.ResponseWriter, r *http.Request) (any, error) {
	var req addRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Paths) == 0 {
		return nil, &apiError{http.StatusBadRequest, "invalid", "paths: give at least one file, directory or glob"}
	}
	for _, p := range req.Paths {
		if !strings.HasPrefix(p, "s3://") && !filepath.IsAbs(p) {
			return nil, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("path %q is relative; the server's working directory is not the caller's: give an absolute path", p)}
		}
	}
	// An add is one commit: it lands whole or not at all, even when the
	// client goes away, so it does not run on the request's context. The
	// lake refuses a file whose resolved path its engine may not read.
	res, err := s.lake.Add(context.WithoutCancel(r.Context()), r.PathValue("table"), req.Paths, rocklake.AddOptions{Create: req.Create})
	if err != nil {
		return nil, err
	}
	s.m.adds.Add(float64(res.Files))
	return res, nil
}

type sqlRequest struct {
	SQL string `json:"sql"`
}

// sqlAnswer is what a write did. SnapshotID is null when it committed
// nothing (no rows, or CREATE TABLE IF NOT EXISTS of a table that
// exists).
type sqlAnswer struct {
	Statement string `json:"statement"`
	Table     string `json:"table"`
	Rows      int64  `json:"rows"`
	FileCount int    `json:"file_count"`
	// FilesRemoved counts the files a DELETE or UPDATE retired.
	FilesRemoved int `json:"files_removed,omitempty"`
	// DeleteFiles counts the delete files a change wrote (merge-on-read).
	DeleteFiles int    `json:"delete_files,omitempty"`
	SnapshotID  *int64 `json:"snapshot_id"`
}

func (s *Server) apiSQL(_ http.ResponseWriter, r *http.Request) (any, error) {
	var req sqlRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	stmts := splitStatements(req.SQL)
	switch {
	case len(stmts) == 0:
		return nil, &apiError{http.StatusBadRequest, "invalid", "sql: give one write statement"}
	case len(stmts) > 1:
		return nil, &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf("sql holds %d statements; send one write per request (each is its own snapshot)", len(stmts))}
	case !rocklake.IsWrite(stmts[0]):
		return nil, &apiError{http.StatusBadRequest, "not_a_write", "POST /v1/sql runs one write statement (INSERT, CREATE TABLE [AS], COPY t FROM 'path'); " +
			"queries go through the PostgreSQL protocol (psql, any PostgreSQL driver)"}
	}
	if cp, err := parseCopyStdin(stmts[0]); err != nil || cp != nil {
		return nil, &apiError{http.StatusBadRequest, "invalid", "COPY ... FROM STDIN takes its data over the PostgreSQL protocol (psql's \\copy, a driver's CopyFrom); over HTTP, COPY from a path the server may read"}
	}
	// A write is one commit: it lands whole or not at all, even when the
	// client goes away meanwhile (as an add does).
	ctx, done := s.writeContext(r.Context())
	defer done()
	res, err := s.lake.Exec(ctx, stmts[0], rocklake.ExecOptions{})
	if err != nil {
		return nil, sqlError(err)
	}
	s.m.observeWrite(res)
	out := sqlAnswer{Statement: res.Statement, Table: res.Table, Rows: res.Rows, FileCount: res.Files, FilesRemoved: res.FilesRemoved, DeleteFiles: res.DeleteFiles}
	if res.Snapshot.ID != 0 {
		out.SnapshotID = &res.Snapshot.ID
	}
	return out, nil
}

// sqlError gives a write's error its HTTP status: the statement's fault
// (SQLSTATE classes 22, 23, 42, 0A) is a 400, with the SQLSTATE said.
func sqlError(err error) error {
	if ae := asAPIError(err); ae.status != http.StatusInternalServerError && !errors.Is(err, rocklake.ErrDuplicate) {
		return ae
	}
	pe := toPGError(err)
	switch {
	case pe.code == "42501":
		return &apiError{http.StatusForbidden, "forbidden", pe.msg}
	case pe.code == "40001":
		return &apiError{http.StatusConflict, "conflict", pe.msg}
	case pe.code == "42P07":
		return &apiError{http.StatusConflict, "exists", pe.msg}
	case pe.code == "25006":
		return &apiError{http.StatusForbidden, "read_only", pe.msg}
	case pe.code == "57014":
		return &apiError{http.StatusServiceUnavailable, "cancelled", pe.msg}
	case pe.code == "58P01", strings.HasPrefix(pe.code, "22"), strings.HasPrefix(pe.code, "23"), strings.HasPrefix(pe.code, "42"), pe.code == "0A000":
		return &apiError{http.StatusBadRequest, "invalid", pe.msg + " (SQLSTATE " + pe.code + ")"}
	}
	return &apiError{http.StatusInternalServerError, "internal", pe.msg}
}
