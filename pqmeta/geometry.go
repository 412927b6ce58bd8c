package pqmeta

import (
	"encoding/json"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/types"
)

// geoParquetColumns types the WKB columns a GeoParquet "geo" key names
// (DuckDB writes GEOMETRY so: a plain BYTE_ARRAY column and that key) as
// GEOMETRY, as DuckDB reads them, instead of BLOB. A geometry has no
// order, so such a leaf keeps no bounds.
func geoParquetColumns(md *metadata.FileMetaData, cols []*Column) {
	v := md.KeyValueMetadata().FindValue("geo")
	if v == nil {
		return
	}
	var geo struct {
		Columns map[string]struct {
			Encoding string `json:"encoding"`
		} `json:"columns"`
	}
	if json.Unmarshal([]byte(*v), &geo) != nil {
		return
	}
	for _, c := range cols {
		g, ok := geo.Columns[c.Name]
		if !ok || !strings.EqualFold(g.Encoding, "WKB") || c.Type.Kind != types.KindBlob || len(c.Leaves) != 1 || c.Leaves[0].Repeated {
			continue
		}
		l := c.Leaves[0]
		c.Type = types.Simple(types.KindGeometry)
		l.Type, l.dec, l.order = c.Type, decNone, orderUndefined
	}
}
