package storage

import "testing"

func TestSyncfsReportsErrorsFrom58(t *testing.T) {
	for rel, want := range map[string]bool{
		"6.18.44-fc-v1045": true, "5.8.0": true, "5.10.0-13-amd64": true, "5.7.19": false,
		"4.19.0-21-amd64": false, "3.2": false, "5": false, "": false, "x.y": false, "5.8-rc1": true,
	} {
		if got := syncfsReportsErrors(rel); got != want {
			t.Errorf("syncfsReportsErrors(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestSyncFSOfAMissingDir is an error, not a silent success.
func TestSyncFSOfAMissingDir(t *testing.T) {
	if err := syncFS(t.TempDir() + "/gone"); err == nil {
		t.Fatal("syncfs of a missing dir succeeded")
	}
	if err := syncFS(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
