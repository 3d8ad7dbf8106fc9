package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestOffsetsRoundTripSortedOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recovery-point-offset-checkpoint")
	in := map[TopicPartition]int64{
		{"orders", 1}:             220,
		{"orders", 0}:             1500,
		{"__consumer_offsets", 7}: 0,
		{"a.b_c-d", 10}:           1 << 62,
		{"orders", 2}:             3,
	}
	if err := WriteOffsets(path, in); err != nil {
		t.Fatalf("WriteOffsets: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "0\n5\n__consumer_offsets 7 0\na.b_c-d 10 4611686018427387904\norders 0 1500\norders 1 220\norders 2 3\n"
	if string(data) != want {
		t.Fatalf("file\n%q\nwant\n%q", data, want)
	}
	got, err := ReadOffsets(path)
	if err != nil {
		t.Fatalf("ReadOffsets: %v", err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("read %v, want %v", got, in)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tmp file left behind: %v", err)
	}
}

func TestOffsetsEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	got, err := ReadOffsets(filepath.Join(dir, "missing"))
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	path := filepath.Join(dir, "cp")
	if err := WriteOffsets(path, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n0\n" {
		t.Fatalf("empty checkpoint %q", data)
	}
	if got, err := ReadOffsets(path); err != nil || len(got) != 0 {
		t.Fatalf("empty checkpoint read: %v, %v", got, err)
	}
}

func TestWriteOffsetsRejectsBadEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp")
	for name, m := range map[string]map[TopicPartition]int64{
		"space in topic":     {{"a b", 0}: 1},
		"empty topic":        {{"", 0}: 1},
		"negative offset":    {{"a", 0}: -1},
		"negative partition": {{"a", -1}: 1},
	} {
		if err := WriteOffsets(path, m); err == nil {
			t.Errorf("%s: WriteOffsets succeeded", name)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rejected write created the file: %v", err)
	}
}

func TestWriteReplacesAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp")
	if err := WriteOffsets(path, map[TopicPartition]int64{{"t", 0}: 1}); err != nil {
		t.Fatal(err)
	}
	// A stale tmp from a crash does not disturb the next write.
	if err := os.WriteFile(path+".tmp", []byte("garbage that is longer than the new file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteOffsets(path, map[TopicPartition]int64{{"t", 0}: 2}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n1\nt 0 2\n" {
		t.Fatalf("file %q", data)
	}
	// Writing into a directory that does not exist fails and says so.
	err := WriteFileAtomic(filepath.Join(t.TempDir(), "no", "such", "cp"), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "cp.tmp") {
		t.Fatalf("write into missing dir: %v", err)
	}
}

func TestParseOffsetsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
	}{
		{"empty", "", 1},
		{"wrong version", "1\n0\n", 1},
		{"version with sign", "+0\n0\n", 1},
		{"missing count", "0\n", 2},
		{"bad count", "0\nx\n", 2},
		{"negative count", "0\n-1\n", 2},
		{"fewer entries than count", "0\n2\nt 0 1\n", 4},
		{"more entries than count", "0\n1\nt 0 1\nt 1 1\n", 4},
		{"blank line", "0\n1\n\n", 3},
		{"extra token", "0\n1\nt 0 1 9\n", 3},
		{"missing token", "0\n1\nt 0\n", 3},
		{"double space", "0\n1\nt  0 1\n", 3},
		{"tab", "0\n1\nt\t0 1\n", 3},
		{"bad partition", "0\n1\nt x 1\n", 3},
		{"negative partition", "0\n1\nt -1 1\n", 3},
		{"partition overflows int32", "0\n1\nt 2147483648 1\n", 3},
		{"bad offset", "0\n1\nt 0 1.5\n", 3},
		{"negative offset", "0\n1\nt 0 -1\n", 3},
		{"offset with sign", "0\n1\nt 0 +1\n", 3},
		{"illegal topic char", "0\n1\nt/x 0 1\n", 3},
		{"duplicate", "0\n2\nt 0 1\nt 0 2\n", 4},
		{"crlf", "0\r\n0\r\n", 1},
		{"trailing blank line", "0\n0\n\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOffsets([]byte(tc.data))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseOffsets(%q) = %v, want ErrMalformed", tc.data, err)
			}
			if want := "line " + strconv.Itoa(tc.line) + ":"; !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %q", err, want)
			}
		})
	}
}

func TestParseOffsetsAcceptsMissingFinalNewline(t *testing.T) {
	got, err := ParseOffsets([]byte("0\n1\nt 3 9"))
	if err != nil || got[TopicPartition{"t", 3}] != 9 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestReadOffsetsNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replication-offset-checkpoint")
	if err := os.WriteFile(path, []byte("0\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadOffsets(path)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadOffsets = %v", err)
	}
}

func TestEpochsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leader-epoch-checkpoint")
	in := []EpochEntry{{0, 0}, {3, 1470}, {4, 1 << 40}}
	if err := WriteEpochs(path, in); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n3\n0 0\n3 1470\n4 1099511627776\n" {
		t.Fatalf("file %q", data)
	}
	got, err := ReadEpochs(path)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("ReadEpochs = %v, %v", got, err)
	}
	if got, err := ReadEpochs(path + ".missing"); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	if err := WriteEpochs(path, []EpochEntry{{-1, 0}}); err == nil {
		t.Fatal("negative epoch written")
	}
}

func TestParseEpochsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
	}{
		{"wrong version", "2\n0\n", 1},
		{"count mismatch", "0\n2\n0 0\n", 4},
		{"extra token", "0\n1\n0 0 0\n", 3},
		{"one token", "0\n1\n5\n", 3},
		{"negative epoch", "0\n1\n-1 0\n", 3},
		{"negative offset", "0\n1\n1 -5\n", 3},
		{"epoch overflows int32", "0\n1\n2147483648 0\n", 3},
		{"not a number", "0\n1\n1 abc\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEpochs([]byte(tc.data))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line "+strconv.Itoa(tc.line)+":") {
				t.Fatalf("ParseEpochs(%q) = %v, want ErrMalformed at line %d", tc.data, err, tc.line)
			}
		})
	}
}

// TestReplaceFileThenSync: ReplaceFile replaces the file whole, leaving
// no temp file; SyncFile fsyncs it, and a file gone meanwhile is no error.
func TestReplaceFileThenSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000042.snapshot")
	for _, data := range []string{"first", "second, longer"} {
		if err := ReplaceFile(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("read %q (%v), want %q", got, err, data)
		}
		if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("temp file left: %v", err)
		}
	}
	if err := SyncFile(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := SyncFile(path); err != nil {
		t.Fatalf("SyncFile of a removed file: %v", err)
	}
}
