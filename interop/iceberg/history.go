package iceberg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	ig "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

// The metadata of a table is its history: one Iceberg snapshot per
// version of the table the catalog still keeps, a version being the
// table's content from a rocklake snapshot that changed it up to the next
// one. Under the metadata directory:
//
//	<table uuid>/
//	  v3-<snapshot>/                one version, written once (the tag:
//	                                versionFormat)
//	    manifest-data.avro          every data file live at <snapshot>
//	    manifest-deletes.avro       their delete files (when there are any)
//	    manifest-data-<spec>.avro   the same for the files in one partition
//	    manifest-deletes-<spec>.avro  of the table's partition spec
//	                                (partition.go)
//	    snap-<snapshot>.avro        the manifest list
//	    version.json                the version's record, written last
//	  metadata-<snapshot>-<hash>.json
//	                                a table metadata listing versions up to
//	                                <snapshot>; hash names the versions listed
//
// A version's Iceberg snapshot id, and its sequence number, is the
// rocklake snapshot that made it: a client that plans remotely at that id
// gets rocklake's plan at that snapshot, which reads the same content. A
// data file's entry has the sequence number of the snapshot that added
// it, ADDED in the version that added it and EXISTING after, so that
// Iceberg's incremental scans find each file once; a delete file has its
// own snapshot's, which no data file it names postdates.
//
// What a snapshot of a kept table shows never changes, so a version is
// written once, whoever asks first; a version directory is named by a
// format tag so that a later rocklake writes its own beside it.

// Options are Materialize's.
type Options struct {
	// History is how many versions the metadata lists, the current one
	// included; 0: DefaultHistory.
	History int
	// Objects gives the object store a table of objects gets its
	// metadata written to, called when first needed; nil: one made from
	// the environment (storage.S3OptionsFromEnv).
	Objects func() (*storage.S3, error)
}

func (o Options) objects(ctx context.Context) func() (*storage.S3, error) {
	if o.Objects != nil {
		return o.Objects
	}
	var st *storage.S3
	var err error
	return func() (*storage.S3, error) {
		if st == nil && err == nil {
			st, err = storage.NewS3(ctx, storage.S3OptionsFromEnv())
		}
		return st, err
	}
}

// DefaultHistory is how many versions of a table its metadata lists,
// counting the current one, unless told otherwise.
const DefaultHistory = 100

// versionFormat tags what a version record means; a change to what a
// record holds or how its version is shown takes a new tag, so that no
// record an older rocklake wrote is read as this one's.
const versionFormat = "v3"

// Metadata is a materialized Iceberg table: its metadata, and where it is.
type Metadata struct {
	Location string // the metadata JSON file
	Metadata table.Metadata
	// SnapshotID is the current Iceberg snapshot's id: the rocklake
	// snapshot that made the table's current content.
	SnapshotID int64
	// Versions are the Iceberg snapshots listed, oldest first.
	Versions []int64
}

// version is one version's record.
type version struct {
	Format   string `json:"format"`
	Snapshot int64  `json:"snapshot"`
	TimeMs   int64  `json:"time_ms"`
	// Catalog, Table and TimeUs say which catalog, table and commit the
	// record is of: a catalog made again (an import keeps table uuids)
	// or restored to an earlier point reuses snapshot ids for other
	// content.
	Catalog string `json:"catalog"`
	Table   int64  `json:"table"`
	TimeUs  int64  `json:"time_us"`
	// NotShown says why the table at this version has no Iceberg form; it
	// is then left out of the history.
	NotShown string          `json:"not_shown,omitempty"`
	Name     string          `json:"name,omitempty"`
	Content  string          `json:"content,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
	Mapping  ig.NameMapping  `json:"mapping,omitempty"`
	Left     []LeftColumn    `json:"left,omitempty"`
	// Held are the top-level column names the version's files hold, with
	// the columns held under each (0: none of the version's), and Shown
	// the top-level field ids its schema shows: a name the history's
	// mapping gives to a field must not stand for anything else in a
	// version that shows that field.
	Held         map[string][]int64 `json:"held,omitempty"`
	Shown        []int              `json:"shown,omitempty"`
	ManifestList string             `json:"manifest_list,omitempty"`
	// Spec is the partition spec the version's partitioned files are
	// listed under (none: every file is under the unpartitioned spec).
	Spec      json.RawMessage   `json:"spec,omitempty"`
	Operation string            `json:"operation,omitempty"`
	Summary   map[string]string `json:"summary,omitempty"`
}

// Versions are the rocklake snapshots at which a table's content began,
// oldest first, among the catalog's kept snapshots (ascending) up to
// upTo: the first kept snapshot at which the table exists, and each later
// one that created, inserted into, deleted from or altered it. A rename
// or a restamp changes nothing an Iceberg reader reads.
func Versions(snaps []catalog.Snapshot, tableID, upTo int64) []catalog.Snapshot {
	first := 0
	for i, s := range snaps {
		if s.ID > upTo {
			break
		}
		if slices.Contains(s.Changes.CreatedTables, tableID) {
			first = i
		}
	}
	var out []catalog.Snapshot
	for i := first; i < len(snaps) && snaps[i].ID <= upTo; i++ {
		s := snaps[i]
		ch := s.Changes
		if i == first || slices.Contains(ch.CreatedTables, tableID) || slices.Contains(ch.InsertedIntoTables, tableID) ||
			slices.Contains(ch.DeletedFromTables, tableID) || slices.Contains(ch.AlteredTables, tableID) {
			out = append(out, s)
		}
	}
	return out
}

// Materialize writes a table's Iceberg metadata (format version 2) at the
// reader's snapshot under dir, or reads back what an earlier call wrote:
// the current version and up to history-1 earlier ones the catalog still
// keeps (history < 1: DefaultHistory), each written once. Versions whose
// content equals the one before are one Iceberg snapshot; a version the
// table had no Iceberg form at, or whose files name a column in a way the
// newer versions' name mapping contradicts, ends the history there. The
// current version must have an Iceberg form (ErrNotShown). Callers
// serialize calls on one dir within a process; processes sharing it write
// the same files.
func Materialize(ctx context.Context, c *catalog.Catalog, r *catalog.Reader, tb catalog.Table, dir string, o Options) (*Metadata, error) {
	history := o.History
	if history < 1 {
		history = DefaultHistory
	}
	snaps, err := c.Snapshots()
	if err != nil {
		return nil, err
	}
	vs := Versions(snaps, tb.ID, r.Snapshot().ID)
	if len(vs) == 0 {
		return nil, fmt.Errorf("table %s: no kept snapshot shows it", tb.Name)
	}
	live, err := r.Files(tb.ID)
	if err != nil {
		return nil, err
	}
	st := &store{ctx: ctx, local: filepath.Join(dir, tb.UUID), s3: o.objects(ctx)}
	if home := objectHome(c, live, tb); home != "" {
		st.remote = home + "_rocklake/iceberg/" + tb.UUID
	}
	again, err := registeredAgain(r, tb.ID, vs)
	if err != nil {
		return nil, err
	}
	// Newest first, until the history is full or ends.
	var kept []*version
	var mapping ig.NameMapping
	for i := len(vs) - 1; i >= 0 && len(kept) < history; i-- {
		if slices.ContainsFunc(again, func(f catalog.DataFile) bool { return f.Begin <= vs[i].ID && vs[i].ID < f.End.V }) {
			// It lists a file whose bytes were replaced in place since
			// (registered again with new statistics): read now, they are
			// not that version's rows, and its bounds and delete
			// positions do not hold for them.
			break
		}
		v, err := readVersion(c, r, st, tb, vs[i])
		if err != nil {
			return nil, err
		}
		if v.NotShown != "" {
			if len(kept) == 0 {
				return nil, fmt.Errorf("%w: %s", ErrNotShown, strings.TrimPrefix(v.NotShown, ErrNotShown.Error()+": "))
			}
			break
		}
		merged := mergeMapping(mapping, v.Mapping)
		if ambiguous(merged) != nil || !consistent(merged, append(slices.Clone(kept), v)) || !specsAgree(kept, v) {
			break
		}
		if len(kept) > 0 && kept[len(kept)-1].Content == v.Content {
			// The same content from an earlier snapshot (an ALTER an
			// Iceberg reader does not see): one version, the earlier.
			kept[len(kept)-1] = v
			continue
		}
		mapping = merged
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: table %s: its current version cannot be listed", ErrNotShown, tb.Name)
	}
	slices.Reverse(kept)
	cur := kept[len(kept)-1]
	h := sha256.New()
	fmt.Fprintf(h, "rocklake-iceberg-%s\x00%s\x00%s\x00%s\x00", versionFormat, c.UUID(), tb.Name, tb.Path)
	ids := make([]int64, len(kept))
	for i, v := range kept {
		ids[i] = v.Snapshot
		fmt.Fprintf(h, "%d:%s\x00", v.Snapshot, v.Content)
	}
	metaRel := fmt.Sprintf("metadata-%d-%s.json", cur.Snapshot, hex.EncodeToString(h.Sum(nil)[:8]))
	metaPath := st.loc(metaRel)
	if raw, err := st.read(metaRel); err == nil {
		md, err := table.ParseMetadataBytes(raw)
		if err != nil {
			return nil, fmt.Errorf("iceberg metadata %s: %w", metaPath, err)
		}
		return &Metadata{Location: metaPath, Metadata: md, SnapshotID: cur.Snapshot, Versions: ids}, nil
	}
	md, err := chain(tb, kept, unread(mapping, kept))
	if err != nil {
		return nil, err
	}
	forget(st, snaps)
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	if err := st.write(metaRel, raw); err != nil {
		return nil, err
	}
	return &Metadata{Location: metaPath, Metadata: md, SnapshotID: cur.Snapshot, Versions: ids}, nil
}

// registeredAgain are the table's files retired by a commit that
// registered the same file again (DataFile.RegisteredAgain: its bytes
// changed in place), when some version but the newest could list one:
// such a commit inserts into the table and deletes from it.
func registeredAgain(r *catalog.Reader, tableID int64, vs []catalog.Snapshot) ([]catalog.DataFile, error) {
	if !slices.ContainsFunc(vs[min(1, len(vs)):], func(s catalog.Snapshot) bool {
		return slices.Contains(s.Changes.InsertedIntoTables, tableID) && slices.Contains(s.Changes.DeletedFromTables, tableID)
	}) {
		return nil, nil
	}
	files, err := r.FilesEver(tableID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(files, func(f catalog.DataFile) bool { return !f.RegisteredAgain || !f.End.Known }), nil
}

// unread adds to a mapping, for each top-level name some kept version's
// files hold that it does not map (a column hidden because two columns
// share its name, one dropped, one the table never took in), a field no
// schema shows: iceberg-go refuses to read a file holding a column the
// mapping does not name, and a field no schema shows is read by no one.
// The ids are from a range rocklake's column ids do not reach (a table
// whose ids do gets none, and stays unreadable to iceberg-go as before).
func unread(mapping ig.NameMapping, kept []*version) ig.NameMapping {
	mapped := map[string]bool{}
	var maxID int
	for _, f := range mapping {
		for _, n := range f.Names {
			mapped[n] = true
		}
		if f.FieldID != nil {
			maxID = max(maxID, *f.FieldID)
		}
	}
	const base = 1 << 30
	if maxID >= base {
		return mapping
	}
	var names []string
	for _, v := range kept {
		for n := range v.Held {
			if !mapped[n] && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	out := slices.Clone(mapping)
	used := map[int]bool{}
	for _, n := range names {
		h := fnv.New32a()
		h.Write([]byte(n))
		id := base + int(h.Sum32()%(base-1))
		for used[id] {
			id = base + (id-base+1)%(base-1)
		}
		used[id] = true
		out = append(out, ig.MappedField{Names: []string{n}, FieldID: &id})
	}
	return out
}

// forget removes what was written for snapshots the catalog no longer
// keeps: no metadata lists them again (Versions gives kept snapshots
// only), and their files would otherwise stay for ever. It runs when a
// new metadata file is written, the moment the history moves, and tries
// again then whatever it failed to remove now.
func forget(st *store, snaps []catalog.Snapshot) {
	kept := make(map[int64]bool, len(snaps))
	for _, s := range snaps {
		kept[s.ID] = true
	}
	entries, err := os.ReadDir(st.local)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		var num string
		switch {
		case e.IsDir() && strings.HasPrefix(name, "v") && strings.Contains(name, "-"):
			num = name[strings.IndexByte(name, '-')+1:]
		case !e.IsDir() && strings.HasPrefix(name, "metadata-") && strings.HasSuffix(name, ".json"):
			num, _, _ = strings.Cut(strings.TrimPrefix(name, "metadata-"), "-")
		default:
			continue
		}
		snap, err := strconv.ParseInt(num, 10, 64)
		if err != nil || kept[snap] {
			continue
		}
		if err := st.remove(name); err != nil {
			return
		}
	}
}

// chain builds the metadata as Iceberg's commits would have: one
// snapshot per version, each committed on the metadata before it, so
// that the snapshot log keeps every one for reads as of a time.
func chain(tb catalog.Table, kept []*version, mapping ig.NameMapping) (table.Metadata, error) {
	id, err := uuid.Parse(tb.UUID)
	if err != nil {
		id = uuid.NewSHA1(uuid.NameSpaceOID, []byte(tb.UUID))
	}
	var md table.Metadata
	var parent *int64
	var lastMs int64
	for i, v := range kept {
		var b *table.MetadataBuilder
		if md == nil {
			if b, err = table.NewMetadataBuilder(2); err != nil {
				return nil, err
			}
			steps := []func() error{
				func() error { return b.SetUUID(id) },
				func() error { return b.SetLoc(tb.Path) },
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return nil, err
				}
			}
		} else if b, err = table.MetadataBuilderFromBase(md, ""); err != nil {
			return nil, err
		}
		var schema ig.Schema
		if err := json.Unmarshal(v.Schema, &schema); err != nil {
			return nil, fmt.Errorf("version %d's schema: %w", v.Snapshot, err)
		}
		if err := b.AddSchema(&schema); err != nil {
			return nil, fmt.Errorf("version %d's schema: %w", v.Snapshot, err)
		}
		if err := b.SetCurrentSchemaID(-1); err != nil {
			return nil, err
		}
		if md == nil {
			// A partition spec and a sort order are bound to a current
			// schema.
			steps := []func() error{
				func() error { return b.AddPartitionSpec(ig.UnpartitionedSpec, true) },
				func() error { return b.SetDefaultSpecID(-1) },
				func() error { return b.AddSortOrder(&table.UnsortedSortOrder) },
				func() error { return b.SetDefaultSortOrderID(-1) },
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return nil, err
				}
			}
		}
		schemaID := b.CurrentSchema().ID
		// A writer's clock may step back; Iceberg refuses a snapshot
		// more than a minute older than the one before it.
		ms := max(v.TimeMs, lastMs)
		lastMs = ms
		props := ig.Properties{}
		for k, val := range v.Summary {
			props[k] = val
		}
		snap := &table.Snapshot{
			SnapshotID: v.Snapshot, ParentSnapshotID: parent, SequenceNumber: v.Snapshot, TimestampMs: ms,
			ManifestList: v.ManifestList, SchemaID: &schemaID,
			Summary: &table.Summary{Operation: table.Operation(v.Operation), Properties: props},
		}
		if err := b.AddSnapshot(snap); err != nil {
			return nil, fmt.Errorf("version %d: %w", v.Snapshot, err)
		}
		if err := b.SetSnapshotRef(table.MainBranch, v.Snapshot, table.BranchRef); err != nil {
			return nil, fmt.Errorf("version %d: %w", v.Snapshot, err)
		}
		if i == len(kept)-1 {
			raw, err := json.Marshal(mapping)
			if err != nil {
				return nil, err
			}
			props := ig.Properties{
				PropNameMapping: string(raw),
				PropTable:       tb.Name,
				PropSnapshot:    strconv.FormatInt(v.Snapshot, 10),
			}
			if len(v.Left) > 0 {
				left, _ := json.Marshal(v.Left)
				props[PropLeft] = string(left)
			}
			if err := b.SetProperties(props); err != nil {
				return nil, err
			}
		}
		if md, err = b.Build(); err != nil {
			return nil, fmt.Errorf("version %d: %w", v.Snapshot, err)
		}
		parent = &kept[i].Snapshot
	}
	return withSpecs(md, kept)
}

// withSpecs adds the versions' partition specs to the metadata, under the
// ids their manifests were written with (partition.go): Iceberg's builder
// numbers specs in the order it is given them, which a version written
// once cannot follow.
func withSpecs(md table.Metadata, kept []*version) (table.Metadata, error) {
	specs := map[int]json.RawMessage{}
	var ids []int
	for _, v := range kept {
		if id, ok := specID(v.Spec); ok {
			if _, seen := specs[id]; !seen {
				ids = append(ids, id)
			}
			specs[id] = v.Spec
		}
	}
	if len(specs) == 0 {
		return md, nil
	}
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	list := []json.RawMessage{json.RawMessage(`{"spec-id":0,"fields":[]}`)}
	last := ig.PartitionDataIDStart - 1
	for _, id := range ids {
		list = append(list, specs[id])
		var spec ig.PartitionSpec
		if err := json.Unmarshal(specs[id], &spec); err != nil {
			return nil, fmt.Errorf("partition spec %d: %w", id, err)
		}
		last = max(last, spec.LastAssignedFieldID())
	}
	cur := 0
	if id, ok := specID(kept[len(kept)-1].Spec); ok {
		cur = id
	}
	for k, v := range map[string]any{"partition-specs": list, "default-spec-id": cur, "last-partition-id": last} {
		if m[k], err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return table.ParseMetadataBytes(raw)
}

// specID is the id of a version's partition spec, if it has one.
func specID(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var s struct {
		ID int `json:"spec-id"`
	}
	if json.Unmarshal(raw, &s) != nil || s.ID == 0 {
		return 0, false
	}
	return s.ID, true
}

// specsAgree says whether a version's spec can be listed beside the newer
// versions kept: its id means the same spec in all of them (ids are
// hashes, and two layouts of one table may share one), and its source
// columns are still in the current schema, in the same type (readers bind
// every spec to the current schema; some fail on a spec whose column was
// dropped).
func specsAgree(kept []*version, v *version) bool {
	id, ok := specID(v.Spec)
	if !ok || len(kept) == 0 {
		return true
	}
	for _, k := range kept {
		if kid, ok := specID(k.Spec); ok && kid == id && !bytes.Equal(k.Spec, v.Spec) {
			return false
		}
	}
	var spec ig.PartitionSpec
	var now, then ig.Schema
	if json.Unmarshal(v.Spec, &spec) != nil || json.Unmarshal(kept[0].Schema, &now) != nil || json.Unmarshal(v.Schema, &then) != nil {
		return false
	}
	for _, f := range spec.Fields() {
		a, okA := now.FindFieldByID(f.SourceID())
		b, okB := then.FindFieldByID(f.SourceID())
		if !okA || !okB || !a.Type.Equals(b.Type) {
			return false
		}
	}
	return true
}

// readVersion reads a version's record, writing the version first when no
// earlier call did.
func readVersion(c *catalog.Catalog, cur *catalog.Reader, st *store, tb catalog.Table, s catalog.Snapshot) (*version, error) {
	vdir := fmt.Sprintf("%s-%d", versionFormat, s.ID)
	rec := rel(vdir, "version.json")
	if raw, err := st.read(rec); err == nil {
		var v version
		if err := json.Unmarshal(raw, &v); err == nil && v.Format == versionFormat && v.Snapshot == s.ID &&
			v.Catalog == c.UUID() && v.Table == tb.ID && v.TimeUs == s.Time.UnixMicro() {
			return &v, nil
		}
	}
	r := cur
	if s.ID != cur.Snapshot().ID {
		var err error
		if r, err = c.Read(s.ID); err != nil {
			return nil, fmt.Errorf("reading the table at snapshot %d: %w", s.ID, err)
		}
		defer r.Close()
	}
	v := &version{Format: versionFormat, Snapshot: s.ID, TimeMs: s.Time.UnixMilli(), Catalog: c.UUID(), Table: tb.ID, TimeUs: s.Time.UnixMicro()}
	name, err := NameAt(r, tb.ID)
	if err != nil {
		return nil, err
	}
	t, err := Load(r, name)
	switch {
	case errors.Is(err, ErrNotShown):
		v.NotShown = err.Error()
	case err != nil:
		return nil, fmt.Errorf("reading the table at snapshot %d: %w", s.ID, err)
	default:
		if err := t.writeVersion(r, st, vdir, s, v); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := st.write(rec, raw); err != nil {
		return nil, err
	}
	return v, nil
}

// NameAt is the name table id had at the reader's snapshot.
func NameAt(r *catalog.Reader, id int64) (string, error) {
	tables, err := r.Tables()
	if err != nil {
		return "", err
	}
	for _, t := range tables {
		if t.ID == id {
			return t.Name, nil
		}
	}
	return "", fmt.Errorf("table %d is not in snapshot %d", id, r.Snapshot().ID)
}

// writeVersion writes the version's manifests and manifest list into vdir
// and fills in its record.
func (t *Table) writeVersion(r *catalog.Reader, st *store, vdir string, s catalog.Snapshot, v *version) error {
	snapID := s.ID
	files, err := t.dataFiles(r)
	if err != nil {
		return err
	}
	// One manifest per spec and content: files in no one partition under
	// the unpartitioned spec, the rest under the table's (partition.go).
	specs := []ig.PartitionSpec{*ig.UnpartitionedSpec}
	if t.part != nil {
		specs = append(specs, t.part.spec)
	}
	var manifests []ig.ManifestFile
	var added, rows, delRows int64
	for _, spec := range specs {
		var entries []ig.ManifestEntry
		for i, df := range files {
			if int(df.SpecID()) != spec.ID() {
				continue
			}
			f := t.Files[i]
			begin := t.begins[f.FileID]
			status := ig.EntryStatusEXISTING
			if begin == snapID {
				status, added = ig.EntryStatusADDED, added+1
			}
			rows += f.Rows
			entries = append(entries, ig.NewManifestEntry(status, &begin, &begin, &begin, df))
		}
		if len(entries) == 0 {
			continue
		}
		manRel := rel(vdir, manifestName("data", spec))
		var buf bytes.Buffer
		mf, err := ig.WriteManifest(st.loc(manRel), &buf, 2, spec, t.Schema.Iceberg, snapID, entries)
		if err != nil {
			return fmt.Errorf("writing the manifest: %w", err)
		}
		if err := st.write(manRel, buf.Bytes()); err != nil {
			return err
		}
		manifests = append(manifests, mf)
	}
	dels := t.deleteFiles()
	for _, spec := range specs {
		var mine []deleteFile
		for _, d := range dels {
			if int(d.file.SpecID()) == spec.ID() {
				mine = append(mine, d)
			}
		}
		if len(mine) == 0 {
			continue
		}
		manRel := rel(vdir, manifestName("deletes", spec))
		manPath := st.loc(manRel)
		var buf bytes.Buffer
		cnt := &countingWriter{w: &buf}
		w, err := ig.NewManifestWriter(2, cnt, spec, t.Schema.Iceberg, snapID, ig.WithManifestWriterContent(ig.ManifestContentDeletes))
		if err != nil {
			return err
		}
		for _, d := range mine {
			begin := d.begin
			status := ig.EntryStatusEXISTING
			if begin == snapID {
				status = ig.EntryStatusADDED
			}
			delRows += d.file.Count()
			if err := w.Add(ig.NewManifestEntry(status, &begin, &begin, &begin, d.file)); err != nil {
				return fmt.Errorf("writing the delete manifest: %w", err)
			}
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("writing the delete manifest: %w", err)
		}
		mf, err := w.ToManifestFile(manPath, cnt.n)
		if err != nil {
			return fmt.Errorf("writing the delete manifest: %w", err)
		}
		if err := st.write(manRel, buf.Bytes()); err != nil {
			return err
		}
		manifests = append(manifests, mf)
	}
	listRel := rel(vdir, fmt.Sprintf("snap-%d.avro", snapID))
	listPath := st.loc(listRel)
	var buf bytes.Buffer
	seq := snapID
	if err := ig.WriteManifestList(2, &buf, snapID, nil, &seq, 0, manifests); err != nil {
		return fmt.Errorf("writing the manifest list: %w", err)
	}
	if err := st.write(listRel, buf.Bytes()); err != nil {
		return err
	}
	schema, err := json.Marshal(t.Schema.Iceberg)
	if err != nil {
		return err
	}
	v.Name, v.Content, v.Schema, v.Mapping, v.Left, v.ManifestList = t.Name, t.Content, schema, t.Schema.Mapping, t.Schema.Left, listPath
	v.Held = t.held
	v.Spec = t.part.specJSON()
	for _, f := range t.Schema.Iceberg.Fields() {
		v.Shown = append(v.Shown, f.ID)
	}
	v.Operation = string(operation(s.Changes, t.Table.ID, added))
	v.Summary = map[string]string{
		"added-data-files":       strconv.FormatInt(added, 10),
		"total-data-files":       strconv.Itoa(len(files)),
		"total-records":          strconv.FormatInt(rows, 10),
		"total-delete-files":     strconv.Itoa(len(dels)),
		"total-position-deletes": strconv.FormatInt(delRows, 10),
		"total-equality-deletes": "0",
		PropSnapshot:             strconv.FormatInt(snapID, 10),
	}
	return nil
}

// manifestName is the file a version's manifest of one content and spec
// is written to.
func manifestName(content string, spec ig.PartitionSpec) string {
	if spec.ID() == 0 {
		return "manifest-" + content + ".avro"
	}
	return fmt.Sprintf("manifest-%s-%d.avro", content, spec.ID())
}

// operation is what a version's snapshot did, as Iceberg names it: an
// append only added files (or created the table), a delete only removed
// rows, an overwrite did both; a version that changed neither (an ALTER
// that shows) replaces.
func operation(ch catalog.Changes, tableID int64, added int64) table.Operation {
	ins := slices.Contains(ch.InsertedIntoTables, tableID) || (slices.Contains(ch.CreatedTables, tableID) && added > 0)
	del := slices.Contains(ch.DeletedFromTables, tableID)
	switch {
	case ins && del:
		return table.OpOverwrite
	case del:
		return table.OpDelete
	case ins:
		return table.OpAppend
	}
	if added > 0 {
		return table.OpAppend
	}
	return table.OpReplace
}

// consistent says that in every version a reader finds, under each
// top-level name the mapping gives to a field the version shows or the
// newest (vs[0]) shows, that field and nothing else: a reader of a
// version reads it with that version's schema, and some (incremental
// scans) with the current one.
func consistent(mapping ig.NameMapping, vs []*version) bool {
	field := map[string]int64{}
	for _, f := range mapping {
		for _, n := range f.Names {
			if f.FieldID != nil {
				field[n] = int64(*f.FieldID)
			}
		}
	}
	for _, v := range vs {
		for n, ids := range v.Held {
			y, ok := field[n]
			if !ok || !slices.Contains(v.Shown, int(y)) && !slices.Contains(vs[0].Shown, int(y)) {
				continue
			}
			if slices.ContainsFunc(ids, func(id int64) bool { return id != y }) {
				return false
			}
		}
	}
	return true
}

// mergeMapping is the name mapping that reads the files of both: each
// field under every name either gives it, by field id at every level.
func mergeMapping(a, b ig.NameMapping) ig.NameMapping {
	var merge func(a, b []ig.MappedField) []ig.MappedField
	merge = func(a, b []ig.MappedField) []ig.MappedField {
		out := slices.Clone(a)
		for _, f := range b {
			i := slices.IndexFunc(out, func(g ig.MappedField) bool {
				return g.FieldID != nil && f.FieldID != nil && *g.FieldID == *f.FieldID
			})
			if i < 0 {
				out = append(out, f)
				continue
			}
			g := out[i]
			names := slices.Clone(g.Names)
			for _, n := range f.Names {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			out[i] = ig.MappedField{FieldID: g.FieldID, Names: names, Fields: merge(g.Fields, f.Fields)}
		}
		return out
	}
	return merge(a, b)
}
