// Package catalogpb holds the protobuf messages the catalog stores.
// catalog.pb.go is generated and committed; regenerate it with
// `go generate ./catalog/catalogpb` (needs protoc and protoc-gen-go).
package catalogpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative catalog.proto
