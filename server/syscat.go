package server

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// PostgreSQL's system catalogs (pg_catalog, information_schema), served
// from a DuckDB database of the server's own, apart from the engine's:
//
//	pgs, iss     every relation of PostgreSQL 15's pg_catalog and
//	             information_schema (pgcatalog.tsv: names, columns and
//	             PostgreSQL's fixed-OID rows), made once; the rows that do
//	             not depend on the catalog's tables (built-in types, the
//	             namespaces, the database, the role, the system relations
//	             themselves)
//	pc_N, is_N   per catalog snapshot N: the relations whose rows do
//	             (pg_class, pg_attribute, pg_type, pg_tables,
//	             information_schema.tables and .columns), each a view of
//	             pgs's rows and snapshot N's, and the functions clients
//	             call on them (format_type, pg_table_is_visible, ...)
//
// A statement that names a system relation is rewritten (syscat_sql.go)
// to read these schemas at the snapshot the session reads, and run there
// in a read-only transaction. The database has no external access and
// locked configuration: no file, extension or setting is reachable from a
// client's query. rocklake's tables are not in it, so a query joins
// system catalogs with system catalogs only.
//
// OIDs: PostgreSQL's own for what has fixed ones (types, pg_catalog's
// relations, namespaces pg_catalog 11 and, for DuckDB's main schema where
// rocklake's tables live, public's 2200); a table's OID is 16384 + 2 *
// its catalog id, its row type's the next one; information_schema's and
// its relations' are rocklake's, from 13000.

//go:embed pgcatalog.tsv
var pgCatalogTSV string

const (
	nspCatalog  = 11
	nspInfo     = 13000
	nspMain     = 2200
	roleOID     = 10
	databaseOID = 16383
	firstUserID = 16384
)

type sysRel struct {
	nsp, name string
	oid       uint32
	kind      string
	cols      []sysCol
	static    [][]*string // fixed-OID rows, PostgreSQL's text
	// dynamic: snapshot N's schema holds the relation (a view of the
	// static rows and N's).
	dynamic bool
}

func (r *sysRel) schema() string {
	if r.nsp == "pg_catalog" {
		return "pgs"
	}
	return "iss"
}

type sysCol struct {
	name    string
	typid   uint32
	typname string
	typmod  int32
	notNull bool
}

// pgType is what a pg_type row says of a type, for pg_attribute's copies.
type pgType struct {
	name, category, align, storage string
	len                            int16
	byval                          bool
	elem                           uint32
	collation                      uint32
	fmtNull, fmtMinus              string
}

type sysDefs struct {
	rels  []*sysRel
	byKey map[string]*sysRel // "pg_catalog.pg_class"
	types map[uint32]*pgType
}

var dynamicRels = map[string]bool{
	"pg_catalog.pg_class": true, "pg_catalog.pg_attribute": true, "pg_catalog.pg_type": true, "pg_catalog.pg_tables": true,
	"information_schema.tables": true, "information_schema.columns": true,
}

var loadSysDefs = sync.OnceValue(func() *sysDefs {
	d := &sysDefs{byKey: map[string]*sysRel{}, types: map[uint32]*pgType{}}
	fmts := map[uint32][2]string{}
	for _, line := range strings.Split(pgCatalogTSV, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		switch f[0] {
		case "rel":
			oid, _ := strconv.ParseUint(f[3], 10, 32)
			r := &sysRel{nsp: f[1], name: f[2], oid: uint32(oid), kind: f[4], dynamic: dynamicRels[f[1]+"."+f[2]]}
			d.rels = append(d.rels, r)
			d.byKey[f[1]+"."+f[2]] = r
		case "att":
			r := d.byKey[f[1]+"."+f[2]]
			typid, _ := strconv.ParseUint(f[5], 10, 32)
			typmod, _ := strconv.ParseInt(f[7], 10, 32)
			r.cols = append(r.cols, sysCol{name: f[4], typid: uint32(typid), typname: f[6], typmod: int32(typmod), notNull: f[8] == "true"})
		case "row":
			r := d.byKey[f[1]]
			vals := make([]*string, len(f)-2)
			for i, v := range f[2:] {
				if v != `\N` {
					s := unescapeTSV(v)
					vals[i] = &s
				}
			}
			r.static = append(r.static, vals)
		case "fmt":
			oid, _ := strconv.ParseUint(f[1], 10, 32)
			fmts[uint32(oid)] = [2]string{f[2], f[3]}
		}
	}
	// Each information_schema relation gets an OID of rocklake's.
	next := uint32(nspInfo + 1)
	for _, r := range d.rels {
		if r.oid == 0 {
			r.oid = next
			next++
		}
	}
	types := d.byKey["pg_catalog.pg_type"]
	at := map[string]int{}
	for i, c := range types.cols {
		at[c.name] = i
	}
	for _, row := range types.static {
		get := func(n string) string {
			if v := row[at[n]]; v != nil {
				return *v
			}
			return ""
		}
		oid, _ := strconv.ParseUint(get("oid"), 10, 32)
		l, _ := strconv.ParseInt(get("typlen"), 10, 16)
		elem, _ := strconv.ParseUint(get("typelem"), 10, 32)
		coll, _ := strconv.ParseUint(get("typcollation"), 10, 32)
		f := fmts[uint32(oid)]
		d.types[uint32(oid)] = &pgType{name: get("typname"), category: get("typcategory"), align: get("typalign"), storage: get("typstorage"),
			len: int16(l), byval: get("typbyval") == "true", elem: uint32(elem), collation: uint32(coll), fmtNull: f[0], fmtMinus: f[1]}
	}
	return d
})

func unescapeTSV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// duckType is the DuckDB type a system catalog column of PostgreSQL type
// name is kept as. OIDs are numbers (BIGINT); a regproc is the function's
// name, as PostgreSQL prints it; PostgreSQL's other types without a
// DuckDB peer (name, "char", aclitem, pg_node_tree, ...) are text.
func duckType(typname string) string {
	switch typname {
	case "bool":
		return "BOOLEAN"
	case "int2":
		return "SMALLINT"
	case "int4":
		return "INTEGER"
	case "int8", "oid", "xid", "xid8", "cid", "regclass", "regtype", "regnamespace", "regrole", "regoper", "regoperator", "regconfig", "regdictionary", "regcollation":
		return "BIGINT"
	case "float4":
		return "FLOAT"
	case "float8", "numeric":
		return "DOUBLE"
	case "timestamptz":
		return "TIMESTAMPTZ"
	case "timestamp":
		return "TIMESTAMP"
	case "interval":
		return "INTERVAL"
	case "bytea":
		return "BLOB"
	case "int2vector", "_int2":
		return "SMALLINT[]"
	case "oidvector", "_oid", "_regtype", "_int8":
		return "BIGINT[]"
	case "_int4":
		return "INTEGER[]"
	case "_float4":
		return "FLOAT[]"
	case "_float8":
		return "DOUBLE[]"
	case "_bool":
		return "BOOLEAN[]"
	}
	if strings.HasPrefix(typname, "_") {
		return "VARCHAR[]"
	}
	return "VARCHAR"
}

// sysCatalog is the server's system-catalog database.
type sysCatalog struct {
	s    *Server
	once sync.Once
	err  error
	db   *sql.DB

	mu    sync.Mutex
	snaps map[int64]*sysSnapshot
	order []int64 // snapshots built, oldest first
}

type sysSnapshot struct {
	id    int64
	ready chan struct{}
	err   error
	users int // queries reading it; it is dropped only at zero
}

// keptSnapshots is how many snapshots' schemas are kept built.
const keptSnapshots = 4

func (c *sysCatalog) open() error {
	c.once.Do(func() {
		c.err = c.setup()
	})
	return c.err
}

// close frees the database, once no session uses it.
func (c *sysCatalog) close() {
	c.once.Do(func() { c.err = errors.New("the server has shut down") })
	if c.db != nil {
		c.db.Close()
	}
}

func (c *sysCatalog) setup() error {
	ctx := context.Background()
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return err
	}
	c.db = sql.OpenDB(connector)
	c.db.SetMaxIdleConns(2)
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var b strings.Builder
	b.WriteString("SET threads = 1; SET memory_limit = '256MB'; SET autoinstall_known_extensions = false; SET autoload_known_extensions = false;\n")
	b.WriteString("CREATE SCHEMA pgs; CREATE SCHEMA iss;\n")
	d := loadSysDefs()
	for _, r := range d.rels {
		defs := make([]string, len(r.cols))
		for i, col := range r.cols {
			defs[i] = sqllex.QuoteName(col.name) + " " + duckType(col.typname)
		}
		fmt.Fprintf(&b, "CREATE TABLE %s.%s (%s);\n", r.schema(), sqllex.QuoteName(r.name), strings.Join(defs, ", "))
		if len(r.static) > 0 {
			fmt.Fprintf(&b, "INSERT INTO %s.%s VALUES ", r.schema(), sqllex.QuoteName(r.name))
			for i, row := range r.static {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(")
				for j, v := range row {
					if j > 0 {
						b.WriteString(", ")
					}
					if v == nil {
						b.WriteString("NULL")
					} else {
						b.WriteString(sqllex.QuoteString(*v))
					}
				}
				b.WriteString(")")
			}
			b.WriteString(";\n")
		}
	}
	c.staticRows(&b, d)
	b.WriteString("CREATE TABLE pgs.__format (oid BIGINT, fmt_null VARCHAR, fmt_minus VARCHAR, elem BIGINT);\nINSERT INTO pgs.__format VALUES ")
	oids := make([]uint32, 0, len(d.types))
	for oid := range d.types {
		oids = append(oids, oid)
	}
	slices.Sort(oids)
	for i, oid := range oids {
		t := d.types[oid]
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %s, %s, %d)", oid, sqllex.QuoteString(t.fmtNull), sqllex.QuoteString(t.fmtMinus), t.elem)
	}
	b.WriteString(";\n")
	b.WriteString(staticMacros)
	if _, err := conn.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("system catalogs: %w", err)
	}
	if err := c.s.registerSessionFunctions(ctx, connRegistrar{conn}); err != nil {
		return err
	}
	// From here on no query reaches a file, an extension or a setting.
	if _, err := conn.ExecContext(ctx, "SET enable_external_access = false; SET lock_configuration = true"); err != nil {
		return err
	}
	return nil
}

// staticRows fills the rows that no snapshot changes: the namespaces, the
// database, the one role, and the system relations themselves.
func (c *sysCatalog) staticRows(b *strings.Builder, d *sysDefs) {
	ins := newInserter(d, c.s.dbName)
	for _, n := range []struct {
		oid  int64
		name string
	}{{nspCatalog, "pg_catalog"}, {99, "pg_toast"}, {nspInfo, "information_schema"}, {nspMain, "main"}} {
		ins.add("pg_catalog.pg_namespace", map[string]any{"oid": n.oid, "nspname": n.name, "nspowner": int64(roleOID)})
		ins.add("information_schema.schemata", map[string]any{"catalog_name": c.s.dbName, "schema_name": n.name, "schema_owner": "rocklake"})
	}
	ins.add("pg_catalog.pg_database", map[string]any{"oid": int64(databaseOID), "datname": c.s.dbName, "datdba": int64(roleOID), "encoding": int64(6),
		"datlocprovider": "c", "datallowconn": true, "datconnlimit": int64(-1), "dattablespace": int64(1663), "datcollate": "C", "datctype": "C"})
	role := map[string]any{"oid": int64(roleOID), "rolname": "rocklake", "rolinherit": true, "rolcanlogin": true, "rolconnlimit": int64(-1)}
	ins.add("pg_catalog.pg_authid", role)
	ins.add("pg_catalog.pg_roles", role)
	ins.add("pg_catalog.pg_user", map[string]any{"usename": "rocklake", "usesysid": int64(roleOID)})
	for _, r := range d.rels {
		nsp := int64(nspCatalog)
		if r.nsp == "information_schema" {
			nsp = nspInfo
		}
		cols := make([]tableColumn, len(r.cols))
		for i, col := range r.cols {
			cols[i] = tableColumn{name: col.name, typid: col.typid, typmod: col.typmod, notNull: col.notNull}
		}
		ins.relation(r.nsp, nsp, int64(r.oid), r.name, r.kind, 0, cols)
	}
	ins.write(b, func(r *sysRel) string { return r.schema() + "." + sqllex.QuoteName(r.name) })
}

// tableColumn is one column as the catalogs describe it.
type tableColumn struct {
	name    string
	typid   uint32
	typmod  int32
	notNull bool
}

// inserter gathers rows per relation as column values and writes them as
// INSERTs; a column not given is NULL, or its type's zero where the
// column is NOT NULL (PostgreSQL's catalogs hold no NULL there).
type inserter struct {
	d    *sysDefs
	db   string // current_database()
	rows map[*sysRel][]map[string]any
	seq  []*sysRel
}

func newInserter(d *sysDefs, db string) *inserter {
	return &inserter{d: d, db: db, rows: map[*sysRel][]map[string]any{}}
}

func (in *inserter) add(rel string, vals map[string]any) {
	r := in.d.byKey[rel]
	if _, ok := in.rows[r]; !ok {
		in.seq = append(in.seq, r)
	}
	in.rows[r] = append(in.rows[r], vals)
}

// relation adds a table's (or a system relation's) rows to pg_class,
// pg_attribute, pg_tables and information_schema's tables and columns.
func (in *inserter) relation(nspName string, nsp, oid int64, name, kind string, tuples float64, cols []tableColumn) {
	am := int64(2)
	if kind == "v" {
		am = 0
	}
	reltype := int64(0)
	if nsp == nspMain {
		reltype = oid + 1
	}
	in.add("pg_catalog.pg_class", map[string]any{"oid": oid, "relname": name, "relnamespace": nsp, "reltype": reltype, "relowner": int64(roleOID),
		"relam": am, "relfilenode": oid, "reltuples": tuples, "relpersistence": "p", "relkind": kind, "relnatts": int64(len(cols)),
		"relispopulated": true, "relreplident": "d"})
	tableType := "BASE TABLE"
	if kind == "v" {
		tableType = "VIEW"
	}
	in.add("information_schema.tables", map[string]any{"table_catalog": in.dbName(), "table_schema": nspName, "table_name": name,
		"table_type": tableType, "is_insertable_into": yesNo(nsp == nspMain), "is_typed": "NO"})
	if kind == "r" {
		in.add("pg_catalog.pg_tables", map[string]any{"schemaname": nspName, "tablename": name, "tableowner": "rocklake",
			"hasindexes": false, "hasrules": false, "hastriggers": false, "rowsecurity": false})
	}
	for i, col := range cols {
		t := in.d.types[col.typid]
		if t == nil {
			t = in.d.types[25]
		}
		ndims := int64(0)
		if t.category == "A" {
			ndims = 1
		}
		in.add("pg_catalog.pg_attribute", map[string]any{"attrelid": oid, "attname": col.name, "atttypid": int64(col.typid), "attstattarget": int64(-1),
			"attlen": int64(t.len), "attnum": int64(i + 1), "attndims": ndims, "attcacheoff": int64(-1), "atttypmod": int64(col.typmod),
			"attbyval": t.byval, "attalign": t.align, "attstorage": t.storage, "attnotnull": col.notNull, "attislocal": true,
			"attcollation": int64(t.collation)})
		in.add("information_schema.columns", infoColumn(in.dbName(), nspName, name, i+1, col, t))
	}
	if reltype != 0 {
		in.add("pg_catalog.pg_type", map[string]any{"oid": reltype, "typname": name, "typnamespace": nsp, "typowner": int64(roleOID), "typlen": int64(-1),
			"typtype": "c", "typcategory": "C", "typisdefined": true, "typdelim": ",", "typrelid": oid, "typsubscript": "-",
			"typinput": "record_in", "typoutput": "record_out", "typreceive": "record_recv", "typsend": "record_send",
			"typmodin": "-", "typmodout": "-", "typanalyze": "-", "typalign": "d", "typstorage": "x", "typtypmod": int64(-1)})
	}
}

func (in *inserter) dbName() string { return in.db }

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// infoColumn is a column's row of information_schema.columns, as
// PostgreSQL's view computes it.
func infoColumn(db, schema, table string, pos int, col tableColumn, t *pgType) map[string]any {
	dataType := t.fmtNull
	if t.elem != 0 && t.len == -1 {
		dataType = "ARRAY"
	}
	row := map[string]any{"table_catalog": db, "table_schema": schema, "table_name": table, "column_name": col.name,
		"ordinal_position": int64(pos), "is_nullable": yesNo(!col.notNull), "data_type": dataType,
		"udt_catalog": db, "udt_schema": "pg_catalog", "udt_name": t.name, "dtd_identifier": strconv.Itoa(pos),
		"is_self_referencing": "NO", "is_identity": "NO", "is_generated": "NEVER", "is_updatable": yesNo(schema == "main")}
	switch col.typid {
	case 21, 23, 20:
		row["numeric_precision"] = int64(map[uint32]int{21: 16, 23: 32, 20: 64}[col.typid])
		row["numeric_precision_radix"], row["numeric_scale"] = int64(2), int64(0)
	case 700, 701:
		row["numeric_precision"] = int64(map[uint32]int{700: 24, 701: 53}[col.typid])
		row["numeric_precision_radix"] = int64(2)
	case 1700:
		row["numeric_precision_radix"] = int64(10)
		if col.typmod >= 4 {
			row["numeric_precision"], row["numeric_scale"] = int64((col.typmod-4)>>16), int64((col.typmod-4)&0xffff)
		}
	case 1082:
		row["datetime_precision"] = int64(0)
	case 1083, 1114, 1184, 1266, 1186:
		p := int64(6)
		if col.typmod >= 0 {
			p = int64(col.typmod)
		}
		row["datetime_precision"] = p
	case 1043, 1042:
		if col.typmod >= 4 {
			row["character_maximum_length"] = int64(col.typmod - 4)
		}
	}
	if col.typid == 25 || col.typid == 1043 || col.typid == 1042 {
		row["character_octet_length"] = int64(1073741824)
	}
	return row
}

// write appends the INSERTs, into table(rel) of each relation.
func (in *inserter) write(b *strings.Builder, table func(*sysRel) string) {
	for _, r := range in.seq {
		rows := in.rows[r]
		fmt.Fprintf(b, "INSERT INTO %s VALUES ", table(r))
		for i, vals := range rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for j, col := range r.cols {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(literalOf(vals[col.name], col))
			}
			b.WriteString(")")
		}
		b.WriteString(";\n")
	}
}

func literalOf(v any, col sysCol) string {
	if v == nil {
		if !col.notNull {
			return "NULL"
		}
		switch t := duckType(col.typname); {
		case t == "BOOLEAN":
			return "false"
		case strings.HasSuffix(t, "[]"):
			return "[]"
		case t == "VARCHAR":
			if col.typname == "regproc" {
				return "'-'"
			}
			return "''"
		default:
			return "0"
		}
	}
	switch x := v.(type) {
	case string:
		return sqllex.QuoteString(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("system catalogs: no literal for %T", v))
}

// build makes snapshot id's schemas pc_id and is_id.
func (c *sysCatalog) build(ctx context.Context, id int64) error {
	r, err := c.s.lake.Catalog().Read(id)
	if err != nil {
		return err
	}
	defer r.Close()
	tables, err := r.Tables()
	if err != nil {
		return err
	}
	d := loadSysDefs()
	ins := newInserter(d, c.s.dbName)
	var sizes []string
	for _, t := range tables {
		cols, err := r.Columns(t.ID)
		if err != nil {
			return err
		}
		var tc []tableColumn
		for _, col := range cols {
			if col.Parent.Known {
				continue // a nested field is part of its column's type
			}
			typid, typmod := pgTypeOf(col.Type)
			tc = append(tc, tableColumn{name: col.Name, typid: typid, typmod: typmod, notNull: !col.Nullable})
		}
		tuples, bytes := float64(-1), int64(0)
		if ts, err := r.TableStats(t.ID); err == nil {
			tuples, bytes = float64(ts.RecordCount), ts.FileSizeBytes
		}
		ins.relation("main", nspMain, tableOID(t.ID), t.Name, "r", tuples, tc)
		sizes = append(sizes, fmt.Sprintf("(%d, %d)", tableOID(t.ID), bytes))
	}
	pc, is := fmt.Sprintf("pc_%d", id), fmt.Sprintf("is_%d", id)
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE SCHEMA %s; CREATE SCHEMA %s;\nCREATE TABLE %s.__sizes (oid BIGINT, bytes BIGINT);\n", pc, is, pc)
	if len(sizes) > 0 {
		fmt.Fprintf(&b, "INSERT INTO %s.__sizes VALUES %s;\n", pc, strings.Join(sizes, ", "))
	}
	schemaOf := func(rel *sysRel) string {
		if rel.nsp == "pg_catalog" {
			return pc
		}
		return is
	}
	for _, rel := range d.rels {
		if rel.dynamic {
			s := schemaOf(rel)
			n := sqllex.QuoteName(rel.name)
			own := sqllex.QuoteName("__" + rel.name)
			fmt.Fprintf(&b, "CREATE TABLE %s.%s AS SELECT * FROM %s.%s LIMIT 0;\n", s, own, rel.schema(), n)
			fmt.Fprintf(&b, "CREATE VIEW %s.%s AS SELECT * FROM %s.%s UNION ALL SELECT * FROM %s.%s;\n", s, n, rel.schema(), n, s, own)
		}
	}
	ins.write(&b, func(rel *sysRel) string { return schemaOf(rel) + "." + sqllex.QuoteName("__"+rel.name) })
	b.WriteString(strings.ReplaceAll(snapshotMacros, "pc.", pc+"."))
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, b.String()); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE; DROP SCHEMA IF EXISTS %s CASCADE", pc, is))
		return fmt.Errorf("system catalogs at snapshot %d: %w", id, err)
	}
	return nil
}

func tableOID(id int64) int64 { return firstUserID + 2*id }

// pgTypeOf is the PostgreSQL type a column is described as: the one its
// values are sent as (oidOf), with the typmod PostgreSQL gives a decimal.
func pgTypeOf(t types.Type) (uint32, int32) {
	duck := types.DuckDBName(t)
	oid := oidOf(duck)
	if oid == oidNumeric && strings.HasPrefix(duck, "DECIMAL(") {
		var p, s int32
		if _, err := fmt.Sscanf(duck, "DECIMAL(%d,%d)", &p, &s); err == nil {
			return oid, (p<<16 | s) + 4
		}
	}
	return oid, -1
}

// acquire builds (or finds) snapshot id's schemas and holds them for one
// query until release.
func (c *sysCatalog) acquire(ctx context.Context, id int64) (release func(), err error) {
	if err := c.open(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.snaps == nil {
		c.snaps = map[int64]*sysSnapshot{}
	}
	sn := c.snaps[id]
	if sn == nil {
		sn = &sysSnapshot{id: id, ready: make(chan struct{})}
		c.snaps[id] = sn
		c.order = append(c.order, id)
		sn.users++
		c.mu.Unlock()
		sn.err = c.build(ctx, id)
		close(sn.ready)
		c.mu.Lock()
		if sn.err != nil {
			delete(c.snaps, id)
			c.order = slices.DeleteFunc(c.order, func(x int64) bool { return x == id })
		}
	} else {
		sn.users++
	}
	c.mu.Unlock()
	<-sn.ready
	release = func() {
		c.mu.Lock()
		sn.users--
		drop := c.evict()
		c.mu.Unlock()
		if len(drop) > 0 {
			c.drop(drop)
		}
	}
	if sn.err != nil {
		release()
		return nil, sn.err
	}
	return release, nil
}

// evict takes the oldest unused snapshots past keptSnapshots out of the
// map, for drop; c.mu is held.
func (c *sysCatalog) evict() []int64 {
	var drop []int64
	for len(c.order)-len(drop) > keptSnapshots {
		victim := int64(-1)
		for _, id := range c.order {
			if sn := c.snaps[id]; sn.users == 0 && !slices.Contains(drop, id) {
				victim = id
				break
			}
		}
		if victim < 0 {
			break
		}
		drop = append(drop, victim)
	}
	for _, id := range drop {
		delete(c.snaps, id)
		c.order = slices.DeleteFunc(c.order, func(x int64) bool { return x == id })
	}
	return drop
}

func (c *sysCatalog) drop(ids []int64) {
	ctx := context.Background()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	for _, id := range ids {
		conn.ExecContext(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS pc_%d CASCADE; DROP SCHEMA IF EXISTS is_%d CASCADE", id, id))
	}
}

// query runs a statement over the system catalogs at snapshot id.
func (c *sysCatalog) query(ctx context.Context, q string, id int64) (*rocklake.Rows, error) {
	// One statement only: the text is run inside a subquery, and a second
	// statement could end the read-only transaction and change the
	// catalogs' database under every session.
	if n := len(sqllex.Split(q)); n != 1 {
		return nil, &pgError{code: "0A000", msg: fmt.Sprintf("a query over the system catalogs is one statement, not %d", n)}
	}
	release, err := c.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	text, _ := rewriteSystemQuery(q, id)
	conn, err := c.db.Conn(ctx)
	if err != nil {
		release()
		return nil, err
	}
	end := func() {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		conn.Close()
		release()
	}
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		end()
		return nil, err
	}
	rows, err := engine.ConnRows(ctx, conn, text, end)
	if err != nil {
		return nil, c.queryError(ctx, err, q)
	}
	return rows, nil
}

// internalSchema is a schema of the system catalogs' database, as a
// message would name it: the static pgs and iss, and each snapshot's
// pc_N and is_N.
var internalSchema = regexp.MustCompile(`\b(pgs|pc_\d+|iss|is_\d+)\.`)

// queryError tells an error of a query over the system catalogs in the
// terms of the query as written: DuckDB ran the rewritten text (schemas
// of its own, macros for PostgreSQL's functions, a wrapper), so the line
// it quotes is left out and its schemas are named as the user named
// them; a syntax error is DuckDB's parser's over the user's own text,
// with its position. A table the query names that is not there is not a
// catalog: the system catalogs are a database of their own.
func (c *sysCatalog) queryError(ctx context.Context, err error, q string) error {
	msg := engine.StripLineQuote(err.Error())
	if strings.Contains(msg, "Catalog Error: Table with name") && strings.Contains(msg, "does not exist") {
		return &pgError{code: "42P01", msg: strings.TrimPrefix(firstLine(msg), "Catalog Error: "),
			hint: "a query that reads PostgreSQL's system catalogs (pg_catalog, information_schema) reads only them: query rocklake's tables in a statement of their own"}
	}
	if strings.Contains(msg, "Parser Error") || strings.Contains(msg, "syntax error") {
		if serr := engine.SyntaxError(ctx, c.db, q); serr != nil {
			return serr
		}
	}
	msg = strings.ReplaceAll(msg, `Values list "`, `Table "`) // a view, to DuckDB
	msg = internalSchema.ReplaceAllStringFunc(msg, func(s string) string {
		if strings.HasPrefix(s, "i") {
			return "information_schema."
		}
		return "pg_catalog."
	})
	return engine.NewQueryError(msg, q, 0, err)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// connRegistrar registers the session functions on a connection of the
// system-catalog database, as the engine does on its own.
type connRegistrar struct{ conn *sql.Conn }

func (r connRegistrar) RegisterScalarUDF(_ context.Context, name string, fn duckdb.ScalarFunc) error {
	if err := duckdb.RegisterScalarUDF(r.conn, name, fn); err != nil {
		return fmt.Errorf("registering %s: %w", name, err)
	}
	return nil
}

func (r connRegistrar) RegisterClientFunction(ctx context.Context, name string, fn duckdb.ScalarFunc) error {
	return r.RegisterScalarUDF(ctx, name, fn)
}

func (r connRegistrar) DefineClientMacro(ctx context.Context, name, params, body string) error {
	_, err := r.conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE MACRO main.%s(%s) AS %s", name, params, body))
	return err
}

// snapshotID is the catalog snapshot the session reads.
func (ss *pgSession) snapshotID() (int64, error) {
	if id, ok := ss.readAt().ID(); ok {
		return id, nil
	}
	return ss.s.latestSnapshot()
}

// staticMacros are made once, in pgs and iss: what no snapshot changes.
// __format holds PostgreSQL's format_type for each built-in type.
const staticMacros = `
CREATE MACRO pgs.__ident_last(s) AS coalesce(nullif(regexp_extract(s, '^(?:(?:"[^"]+"|[^."]+)\.)?"([^"]+)"$', 1), ''), lower(nullif(regexp_extract(s, '^(?:(?:"[^"]+"|[^."]+)\.)?([^."]+)$', 1), '')));
CREATE MACRO pgs.__ident_schema(s) AS coalesce(nullif(regexp_extract(s, '^"([^"]+)"\.', 1), ''), lower(nullif(regexp_extract(s, '^([^."]+)\.', 1), '')));
CREATE MACRO pgs.__typmod_base(t, m) AS CASE t
  WHEN 1700 THEN CASE WHEN m >= 4 THEN 'numeric(' || ((m - 4) >> 16) || ',' || ((m - 4) & 65535) || ')' ELSE 'numeric' END
  WHEN 1043 THEN CASE WHEN m >= 4 THEN 'character varying(' || (m - 4) || ')' ELSE 'character varying' END
  WHEN 1042 THEN CASE WHEN m >= 4 THEN 'character(' || (m - 4) || ')' ELSE 'character' END
  WHEN 1083 THEN 'time(' || m || ') without time zone'
  WHEN 1114 THEN 'timestamp(' || m || ') without time zone'
  WHEN 1184 THEN 'timestamp(' || m || ') with time zone'
  WHEN 1266 THEN 'time(' || m || ') with time zone'
  WHEN 1560 THEN 'bit(' || m || ')'
  WHEN 1562 THEN 'bit varying(' || m || ')' END;
CREATE MACRO iss._pg_expandarray(arr) AS unnest(list_transform(range(1, len(arr) + 1), i -> {'x': arr[i], 'n': i}));
`

// snapshotMacros are made in each snapshot's schema (pc. stands for it):
// the functions clients call on the catalogs, over that snapshot's rows.
// rocklake has no indexes, constraints, rules, triggers, comments or
// functions of its own: their definitions are NULL. A session may read
// every table and schema and create none (writes go through the writer
// role, which these do not see).
const snapshotMacros = `
CREATE MACRO pc.format_type(t, m) AS CASE
  WHEN t IS NULL THEN NULL
  WHEN m >= 0 AND pgs.__typmod_base(t, m) IS NOT NULL THEN pgs.__typmod_base(t, m)
  WHEN m >= 0 AND pgs.__typmod_base((SELECT elem FROM pgs.__format __f WHERE __f.oid = t), m) IS NOT NULL
    THEN pgs.__typmod_base((SELECT elem FROM pgs.__format __f WHERE __f.oid = t), m) || '[]'
  ELSE coalesce((SELECT CASE WHEN m IS NULL THEN fmt_null ELSE fmt_minus END FROM pgs.__format __f WHERE __f.oid = t),
    (SELECT typname FROM pc.pg_type __y WHERE __y.oid = t), '???') END;
CREATE MACRO pc.pg_get_userbyid(o) AS CASE WHEN o = 10 THEN 'rocklake' ELSE 'unknown (OID=' || o || ')' END;
CREATE MACRO pc.pg_table_is_visible(o) AS coalesce((SELECT relnamespace IN (11, 2200) FROM pc.pg_class __c WHERE __c.oid = o), false);
CREATE MACRO pc.pg_type_is_visible(o) AS coalesce((SELECT typnamespace IN (11, 2200) FROM pc.pg_type __y WHERE __y.oid = o), false);
CREATE MACRO pc.pg_function_is_visible(o) AS true;
CREATE MACRO pc.pg_get_expr(e, r) AS e::VARCHAR, (e, r, p) AS e::VARCHAR;
CREATE MACRO pc.__may_read(p) AS NOT regexp_matches(upper(p), 'INSERT|UPDATE|DELETE|TRUNCATE|TRIGGER|CREATE|MAINTAIN');
CREATE MACRO pc.has_table_privilege(t, p) AS pc.__may_read(p), (u, t, p) AS pc.__may_read(p);
CREATE MACRO pc.has_schema_privilege(n, p) AS pc.__may_read(p), (u, n, p) AS pc.__may_read(p);
CREATE MACRO pc.has_database_privilege(d, p) AS pc.__may_read(p), (u, d, p) AS pc.__may_read(p);
CREATE MACRO pc.has_column_privilege(t, c, p) AS pc.__may_read(p), (u, t, c, p) AS pc.__may_read(p);
CREATE MACRO pc.has_any_column_privilege(t, p) AS pc.__may_read(p), (u, t, p) AS pc.__may_read(p);
CREATE MACRO pc.has_sequence_privilege(t, p) AS pc.__may_read(p), (u, t, p) AS pc.__may_read(p);
CREATE MACRO pc.has_function_privilege(f, p) AS true, (u, f, p) AS true;
CREATE MACRO pc.pg_has_role(r, m) AS true, (u, r, m) AS true;
CREATE MACRO pc.obj_description(o) AS NULL::VARCHAR, (o, c) AS NULL::VARCHAR;
CREATE MACRO pc.col_description(o, n) AS NULL::VARCHAR;
CREATE MACRO pc.shobj_description(o, c) AS NULL::VARCHAR;
CREATE MACRO pc.pg_encoding_to_char(e) AS CASE WHEN e = 6 THEN 'UTF8' ELSE '' END;
CREATE MACRO pc.pg_char_to_encoding(s) AS CASE WHEN upper(s) IN ('UTF8', 'UTF-8', 'UNICODE') THEN 6 ELSE -1 END;
CREATE MACRO pc.pg_get_indexdef(o) AS NULL::VARCHAR, (o, c, p) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_constraintdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_viewdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_triggerdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_ruledef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_partkeydef(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_function_arguments(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_function_identity_arguments(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_function_result(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_serial_sequence(t, c) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_statisticsobjdef_columns(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_statisticsobjdef(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_statisticsobjdef_expressions(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_partition_constraintdef(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_get_functiondef(o) AS NULL::VARCHAR;
CREATE MACRO pc.pg_relation_is_publishable(o) AS false;
CREATE MACRO pc.pg_collation_is_visible(o) AS true;
CREATE MACRO pc.pg_operator_is_visible(o) AS true;
CREATE MACRO pc.pg_opclass_is_visible(o) AS true;
CREATE MACRO pc.pg_conversion_is_visible(o) AS true;
CREATE MACRO pc.pg_is_other_temp_schema(o) AS false;
CREATE MACRO pc.pg_my_temp_schema() AS 0;
CREATE MACRO pc.pg_tablespace_location(o) AS '';
CREATE MACRO pc.pg_is_in_recovery() AS false;
CREATE MACRO pc.pg_relation_size(o) AS coalesce((SELECT bytes FROM pc.__sizes __z WHERE __z.oid = o), 0), (o, f) AS CASE WHEN f = 'main' THEN coalesce((SELECT bytes FROM pc.__sizes __z WHERE __z.oid = o), 0) ELSE 0 END;
CREATE MACRO pc.pg_table_size(o) AS coalesce((SELECT bytes FROM pc.__sizes __z WHERE __z.oid = o), 0);
CREATE MACRO pc.pg_total_relation_size(o) AS coalesce((SELECT bytes FROM pc.__sizes __z WHERE __z.oid = o), 0);
CREATE MACRO pc.pg_indexes_size(o) AS 0;
CREATE MACRO pc.array_upper(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN len(a) END;
CREATE MACRO pc.array_lower(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN 1 END;
CREATE MACRO pc.current_schemas(b) AS CASE WHEN b THEN ['pg_catalog', 'main'] ELSE ['main'] END;
CREATE MACRO pc.current_schema() AS 'main';
CREATE MACRO pc.quote_ident(s) AS CASE WHEN regexp_matches(s, '^[a-z_][a-z0-9_$]*$') THEN s ELSE '"' || replace(s, '"', '""') || '"' END;
CREATE MACRO pc.__to_regclass(s) AS (SELECT __c.oid FROM pc.pg_class __c JOIN pgs.pg_namespace __n ON __n.oid = __c.relnamespace
  WHERE __c.relname = pgs.__ident_last(s) AND ((pgs.__ident_schema(s) IS NULL AND __c.relnamespace IN (11, 2200)) OR __n.nspname = pgs.__ident_schema(s))
  ORDER BY __c.relnamespace LIMIT 1);
CREATE MACRO pc.__to_regtype(s) AS coalesce((SELECT __y.oid FROM pc.pg_type __y WHERE __y.typname = pgs.__ident_last(s) ORDER BY __y.oid LIMIT 1),
  (SELECT __f.oid FROM pgs.__format __f WHERE __f.fmt_null = lower(trim(s)) ORDER BY __f.oid LIMIT 1));
CREATE MACRO pc.__to_regnamespace(s) AS (SELECT __n.oid FROM pgs.pg_namespace __n WHERE __n.nspname = pgs.__ident_last(s));
CREATE MACRO pc.__to_regrole(s) AS (SELECT __r.oid FROM pgs.pg_authid __r WHERE __r.rolname = pgs.__ident_last(s));
CREATE MACRO pc.__to_regproc(s) AS pgs.__ident_last(s);
CREATE MACRO pc.to_regclass(s) AS pc.__to_regclass(s);
CREATE MACRO pc.to_regtype(s) AS pc.__to_regtype(s);
CREATE MACRO pc.to_regnamespace(s) AS pc.__to_regnamespace(s);
CREATE MACRO pc.to_regrole(s) AS pc.__to_regrole(s);
CREATE MACRO pc.__regclass_name(o) AS coalesce((SELECT CASE WHEN __c.relnamespace IN (11, 2200) THEN __c.relname ELSE __n.nspname || '.' || __c.relname END
  FROM pc.pg_class __c JOIN pgs.pg_namespace __n ON __n.oid = __c.relnamespace WHERE __c.oid = o), o::VARCHAR);
CREATE MACRO pc.__regtype_name(o) AS pc.format_type(o, NULL);
CREATE MACRO pc.__regnamespace_name(o) AS coalesce((SELECT __n.nspname FROM pgs.pg_namespace __n WHERE __n.oid = o), o::VARCHAR);
CREATE MACRO pc.__regrole_name(o) AS coalesce((SELECT __r.rolname FROM pgs.pg_authid __r WHERE __r.oid = o), o::VARCHAR);
CREATE MACRO pc.__regproc_name(o) AS o;
`

// catalogMacros are the names snapshotMacros and staticMacros define
// for clients, by the schema a client names them in.
var catalogMacros = sync.OnceValue(func() map[string]map[string]bool {
	out := map[string]map[string]bool{"pg_catalog": {}, "information_schema": {}}
	for _, line := range strings.Split(snapshotMacros+staticMacros, "\n") {
		for prefix, nsp := range map[string]string{"CREATE MACRO pc.": "pg_catalog", "CREATE MACRO iss.": "information_schema"} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				name := rest[:strings.IndexByte(rest, '(')]
				if !strings.HasPrefix(name, "__") {
					out[nsp][name] = true
				}
			}
		}
	}
	return out
})
