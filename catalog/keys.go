package catalog

import (
	"encoding/binary"
	"fmt"
)

// The tag table: the first byte of every key. One tag per kind of row;
// TestTagsAreDistinct checks that no two collide. Tags are stored on disk:
// never renumber one.
const (
	tagMeta              byte = 0x01 // 01                              → Meta
	tagSnapshot          byte = 0x02 // 02 snap                         → Snapshot
	tagSchema            byte = 0x03 // 03 schema begin                 → Schema
	tagTable             byte = 0x04 // 04 table begin                  → Table
	tagColumn            byte = 0x05 // 05 table column begin           → Column
	tagDataFile          byte = 0x06 // 06 table file                   → DataFile
	tagFilePath          byte = 0x07 // 07 table path                   → DataFile (id only) of the live file at path
	tagFileColumnStats   byte = 0x09 // 09 table column file            → stats.Column
	tagRowGroupStats     byte = 0x0A // 0A table column file rowgroup   → RowGroupStats
	tagFileVariantStats  byte = 0x0B // 0B table column file path       → VariantStats
	tagTableStats        byte = 0x0C // 0C table                        → TableStats
	tagTableColumnStats  byte = 0x0D // 0D table column                 → TableColumnStats
	tagTableVariantStats byte = 0x0E // 0E table column path            → VariantStats
	tagFileToDelete      byte = 0x0F // 0F table file                   → FileToDelete (expired, awaiting cleanup)
	tagFileFilter        byte = 0x10 // 10 table column file            → MembershipFilter
	tagFence             byte = 0x11 // 11                              → random bytes every write replaces (fence.go)
	tagMemberSlab        byte = 0x12 // 12 table column level first     → MembershipSlab (membership.go)
	tagMemberGroup       byte = 0x13 // 13 table column level first group(4) → MembershipGroup
	tagFileBlock         byte = 0x14 // 14 table first                  → FileBlock (blocks.go)
	tagStatsBlock        byte = 0x15 // 15 table column first           → StatsBlock
	tagRemovedFiles      byte = 0x16 // 16 table end                    → RemovedFiles
	tagBlocksMarker      byte = 0x17 // 17 table                        → FileBlocks: the blocks are complete
	tagForgottenFile     byte = 0x18 // 18 table file                   → ForgottenFile (a user's file expire forgot)
	tagDeleteFile        byte = 0x19 // 19 table file begin             → DeleteFile (positional deletes of data file "file")
	tagBlockSummary      byte = 0x1A // 1A table column first           → ColumnStats: stats block 15's files folded (blocksummary.go)
	tagObjectRoot        byte = 0x1B // 1B location                     → ObjectRoot: a prefix writes to objects upload under (objectlease.go)
	tagExpiredSnapshot   byte = 0x1C // 1C snap                         → Snapshot: what an expiry not yet finished needs of one it expired (expirewrites.go)
)

// allTags lists every tag with its name, for the collision test and for
// tools that walk the store.
var allTags = map[string]byte{
	"meta":                tagMeta,
	"snapshot":            tagSnapshot,
	"schema":              tagSchema,
	"table":               tagTable,
	"column":              tagColumn,
	"data_file":           tagDataFile,
	"file_path":           tagFilePath,
	"file_column_stats":   tagFileColumnStats,
	"row_group_stats":     tagRowGroupStats,
	"file_variant_stats":  tagFileVariantStats,
	"table_stats":         tagTableStats,
	"table_column_stats":  tagTableColumnStats,
	"table_variant_stats": tagTableVariantStats,
	"file_to_delete":      tagFileToDelete,
	"file_filter":         tagFileFilter,
	"fence":               tagFence,
	"membership_slab":     tagMemberSlab,
	"membership_group":    tagMemberGroup,
	"file_block":          tagFileBlock,
	"stats_block":         tagStatsBlock,
	"removed_files":       tagRemovedFiles,
	"blocks_marker":       tagBlocksMarker,
	"forgotten_file":      tagForgottenFile,
	"delete_file":         tagDeleteFile,
	"block_summary":       tagBlockSummary,
	"object_root":         tagObjectRoot,
	"expired_snapshot":    tagExpiredSnapshot,
}

// key builds tag | ids..., each id as 8 big-endian bytes so that keys sort
// by id. Ids are never negative.
func key(tag byte, ids ...int64) []byte {
	k := make([]byte, 1, 1+8*len(ids))
	k[0] = tag
	for _, id := range ids {
		k = binary.BigEndian.AppendUint64(k, uint64(id))
	}
	return k
}

// keyWithString appends a string suffix (a variant path) after the ids.
func keyWithString(tag byte, s string, ids ...int64) []byte {
	return append(key(tag, ids...), s...)
}

// rowGroupKey uses 4 bytes for the row-group ordinal.
func rowGroupKey(table, column, file int64, rg int32) []byte {
	return binary.BigEndian.AppendUint32(key(tagRowGroupStats, table, column, file), uint32(rg))
}

// idAt reads the i-th id of a key made by key().
func idAt(k []byte, i int) (int64, error) {
	off := 1 + 8*i
	if len(k) < off+8 {
		return 0, fmt.Errorf("catalog: key %x too short for id %d", k, i)
	}
	return int64(binary.BigEndian.Uint64(k[off:])), nil
}

// groupKey uses 4 bytes for the group ordinal.
func groupKey(table, column, level, first int64, group int) []byte {
	return binary.BigEndian.AppendUint32(key(tagMemberGroup, table, column, level, first), uint32(group))
}
