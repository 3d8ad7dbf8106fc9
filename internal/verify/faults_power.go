package verify

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// A power loss costs a node what its last fsync did not cover. weir, as
// Kafka, does not fsync appends by default (durability comes from the
// other replicas), so a node that loses power comes back with less than
// it acknowledged to its leader, or than it acknowledged to producers as
// a leader. The cluster must not lose a record for it: the node comes
// back as a new incarnation, out of every ISR, and fetches again what it
// lost.
//
// loseUnflushed does to a stopped node's log dirs what the lost page
// cache would have done. The durable floor of a partition is its
// recovery point as the node's recovery-point-offset-checkpoint last
// recorded it: everything below it was fsynced (a later fsync may have
// made more durable, which a pessimistic cut may take away too: recovery
// trusts nothing above the checkpoint either). From a drawn byte at or
// past the floor, the log is cut:
//   - at that byte, or at the start of the batch holding it (the file's
//     size was written back, its last pages were not), sometimes followed
//     by zeros (blocks allocated, data never written);
//   - each later segment, created by a roll the kernel may have written
//     back before the older tail, is removed, left empty or kept whole.
//
// A producer snapshot past the floor (written at a roll, fsynced only by
// the roll's flush) is kept, removed, cut short or zeroed. Indexes,
// leader-epoch-checkpoint and the other checkpoints (written with an
// fsync) are left as they are: they may describe records that are gone.
// The machine restarts, so the boot the log dir was opened in is no longer
// the current one: its boot record is removed, as a new boot id would make
// it stale, and the node registers as having lost unflushed writes.
func loseUnflushed(logDir string, topics []string, rng *rand.Rand) (string, error) {
	rps, err := checkpoint.ReadOffsets(filepath.Join(logDir, "recovery-point-offset-checkpoint"))
	if err != nil {
		return "", fmt.Errorf("power loss: %w", err)
	}
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return "", fmt.Errorf("power loss: %w", err)
	}
	var lost []string
	var total int64
	for _, e := range ents {
		if !e.IsDir() || !ofTopics(e.Name(), topics) {
			continue
		}
		i := strings.LastIndexByte(e.Name(), '-')
		p, err := strconv.ParseInt(e.Name()[i+1:], 10, 32)
		if err != nil {
			continue
		}
		rp := rps[checkpoint.TopicPartition{Topic: e.Name()[:i], Partition: int32(p)}]
		n, what, err := cutUnflushed(filepath.Join(logDir, e.Name()), rp, rng)
		if err != nil {
			return "", fmt.Errorf("power loss in %s: %w", e.Name(), err)
		}
		if n > 0 || what != "" {
			lost = append(lost, e.Name()+what)
			total += n
		}
	}
	if err := os.Remove(filepath.Join(logDir, ".weir_boot")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("power loss: %w", err)
	}
	slices.Sort(lost)
	return fmt.Sprintf("power loss: %d unflushed bytes gone from %d partitions (%s)", total, len(lost), strings.Join(lost, " ")), nil
}

// cutUnflushed cuts one partition's log past its recovery point rp and
// returns the bytes it took and a note of what it did to later segments.
func cutUnflushed(dir string, rp int64, rng *rand.Rand) (int64, string, error) {
	segs, err := segmentsOf(dir)
	if err != nil || len(segs) == 0 {
		return 0, "", err
	}
	// The segment holding the recovery point: the last with base <= rp.
	first := 0
	for i, s := range segs {
		if s.base <= rp {
			first = i
		}
	}
	at := first + rng.IntN(len(segs)-first)
	data, err := os.ReadFile(segs[at].path)
	if err != nil {
		return 0, "", err
	}
	lo := 0
	if at == first {
		lo = batchAt(data, segs[at].base, rp)
	}
	cut := lo + rng.IntN(len(data)-lo+1)
	if rng.IntN(2) == 0 {
		cut = max(batchStart(data, cut), lo)
	}
	gone := int64(len(data) - cut)
	var zeros int
	if rng.IntN(4) == 0 {
		zeros = 1 + rng.IntN(4096)
	}
	if gone > 0 || zeros > 0 {
		if err := writeTail(segs[at].path, cut, zeros); err != nil {
			return 0, "", err
		}
	}
	var notes []string
	for _, s := range segs[at+1:] {
		st, err := os.Stat(s.path)
		if err != nil {
			return 0, "", err
		}
		switch rng.IntN(3) {
		case 0:
			gone += st.Size()
			notes = append(notes, "removed")
			err = os.Remove(s.path)
		case 1:
			gone += st.Size()
			notes = append(notes, "emptied")
			err = os.Truncate(s.path, 0)
		default:
			notes = append(notes, "kept")
		}
		if err != nil {
			return 0, "", err
		}
	}
	snaps, err := damageSnapshots(dir, rp, rng)
	if err != nil {
		return 0, "", err
	}
	what := ""
	if zeros > 0 {
		what = fmt.Sprintf("+%dz", zeros)
	}
	if len(notes) > 0 {
		what += "[later " + strings.Join(notes, ",") + "]"
	}
	if len(snaps) > 0 {
		what += "[snapshots " + strings.Join(snaps, ",") + "]"
	}
	return gone, what, nil
}

// damageSnapshots does to each producer snapshot past rp what a power
// loss may: it is kept, removed, cut short or zeroed (its size reached
// the disk, its data did not).
func damageSnapshots(dir string, rp int64, rng *rand.Rand) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".snapshot")
		if !ok {
			continue
		}
		if off, err := strconv.ParseInt(name, 10, 64); err != nil || off <= rp {
			continue
		}
		path := filepath.Join(dir, e.Name())
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		switch rng.IntN(4) {
		case 0:
			notes = append(notes, "kept")
		case 1:
			notes = append(notes, "removed")
			err = os.Remove(path)
		case 2:
			notes = append(notes, "cut")
			err = os.Truncate(path, rng.Int64N(st.Size()+1))
		default:
			notes = append(notes, "zeroed")
			err = os.WriteFile(path, make([]byte, st.Size()), 0o644)
		}
		if err != nil {
			return nil, err
		}
	}
	return notes, nil
}

type segFile struct {
	base int64
	path string
}

// segmentsOf lists a partition dir's .log files by base offset.
func segmentsOf(dir string) ([]segFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segFile
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, segFile{base: base, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(segs, func(a, b segFile) int { return cmp.Compare(a.base, b.base) })
	return segs, nil
}

// batchAt is the byte position of the first batch of a segment whose
// base offset is at least off (the segment's end if none): where the
// recovery point lies in the file.
func batchAt(data []byte, base, off int64) int {
	if off <= base {
		return 0
	}
	pos := 0
	for pos+12 <= len(data) {
		if int64(binary.BigEndian.Uint64(data[pos:])) >= off {
			return pos
		}
		next := pos + 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
		if next > len(data) || next <= pos {
			break
		}
		pos = next
	}
	return min(pos, len(data))
}

// batchStart is the start of the batch holding byte cut (cut itself if
// it is at a batch boundary or past the last whole batch).
func batchStart(data []byte, cut int) int {
	pos := 0
	for pos+12 <= len(data) {
		next := pos + 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
		if next > cut || next <= pos {
			return pos
		}
		pos = next
	}
	return min(pos, cut)
}

// writeTail truncates path at size and appends n zeros.
func writeTail(path string, size, zeros int) error {
	if err := os.Truncate(path, int64(size)); err != nil {
		return err
	}
	if zeros == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, zeros))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// wipeLogDir is a replaced data disk: every file and directory of a
// stopped node's log dir goes, its metadata log excepted (kept on a disk of
// its own, as metadata.log.dir allows: a Raft voter that forgot its votes
// is another matter). The node comes back with nothing, registers as
// having lost unflushed writes (its broker epoch record is gone too),
// leaves every ISR and ELR it was in, and fetches every replica again.
func wipeLogDir(logDir string, _ []string, _ *rand.Rand) (string, error) {
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return "", fmt.Errorf("wipe: %w", err)
	}
	var total int64
	n := 0
	for _, e := range ents {
		if e.Name() == raftDirName {
			continue
		}
		path := filepath.Join(logDir, e.Name())
		total += du(path)
		if err := os.RemoveAll(path); err != nil {
			return "", fmt.Errorf("wipe: %w", err)
		}
		n++
	}
	return fmt.Sprintf("log dir wiped: %d entries, %d bytes", n, total), nil
}

// raftDirName is the metadata log's directory in its metadata.log.dir,
// which is the first log dir unless configured apart.
const raftDirName = "__raft"

// du is the bytes of the files under path.
func du(path string) int64 {
	var total int64
	filepath.WalkDir(path, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}
