package catalog

import (
	"slices"
	"testing"

	"github.com/rocklake/rocklake/catalog/catalogpb"
)

// delete_mode has three states: unset (merge-on-read, the default, as
// DuckLake deletes), merge-on-read asked for, copy-on-write asked for;
// each is shown as set, survives the stored row, and reset returns to the
// default. A row stored before copy_on_write existed reads as it did.
func TestDeleteModeDefaultIsMergeOnRead(t *testing.T) {
	for _, tc := range []struct {
		set      string // "" leaves the option unset; "reset" resets it
		byFile   bool
		settings []string
	}{
		{"", true, nil},
		{MergeOnRead, true, []string{"delete_mode = merge-on-read"}},
		{CopyOnWrite, false, []string{"delete_mode = copy-on-write"}},
		{"reset", true, nil},
	} {
		var o WriteOptions
		if tc.set == "reset" {
			if err := applyOption(&o, OptionDeleteMode, CopyOnWrite, false); err != nil {
				t.Fatal(err)
			}
			if err := applyOption(&o, OptionDeleteMode, "", true); err != nil {
				t.Fatal(err)
			}
		} else if tc.set != "" {
			if err := applyOption(&o, OptionDeleteMode, tc.set, false); err != nil {
				t.Fatal(err)
			}
		}
		back := tableFromPB(tableToPB(Table{Name: "t", WriteOptions: o}, nil)).WriteOptions
		for _, w := range []WriteOptions{o, back} {
			if w.DeletesByFile() != tc.byFile || !slices.Equal(w.Settings(), tc.settings) {
				t.Errorf("%q: deletes by file %v, settings %v; want %v, %v", tc.set, w.DeletesByFile(), w.Settings(), tc.byFile, tc.settings)
			}
		}
	}
	if err := applyOption(&WriteOptions{}, OptionDeleteMode, "sometimes", false); err == nil {
		t.Error("delete_mode = sometimes was taken")
	}
	old := tableFromPB(&catalogpb.Table{Name: "t", WriteOptions: &catalogpb.WriteOptions{MergeOnRead: true}}).WriteOptions
	if !old.DeletesByFile() || old.CopyOnWrite {
		t.Errorf("a stored merge-on-read row reads as %+v", old)
	}
}
