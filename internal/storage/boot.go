package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Whether a crash could have lost acknowledged writes.
//
// Appends are not fsynced by default, so what a crash costs depends on
// what crashed. A process killed on a running machine loses nothing it
// wrote: the kernel's page cache holds every write and writes it back. A
// machine that loses power or panics loses whatever the page cache had
// not written back, past each log's recovery point. Only the second can
// take away records a replica reported having, which is what the
// controller must know before it lets that replica lead on the strength
// of its log (eligible leader replicas, KIP-966).
//
// So each log dir records the boot it was last opened in (Linux's
// boot_id, in bootFile), and the broker epoch it last served under
// (brokerEpochFile, BrokerEpoch). At start a dir may have lost unflushed
// writes when it was not shut down cleanly, holds logs, and the machine
// has restarted since it was opened, or the boot cannot be told
// (LoadStats.LostUnflushed). Neither file needs an fsync: after a power
// loss a missing or torn file reads as another boot, the safe answer.

const (
	bootFile        = ".weir_boot"
	brokerEpochFile = ".weir_broker_epoch"
	bootIDPath      = "/proc/sys/kernel/random/boot_id"
)

// currentBoot is this machine's boot id, "" where it cannot be read.
func currentBoot() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// mayHaveLost reports whether log dir may have lost unflushed writes in a
// crash (see above): clean says its clean-shutdown marker is there, logs
// how many logs it holds, boot is this boot's id.
func mayHaveLost(dir string, clean bool, logs int, boot string) bool {
	prev, err := os.ReadFile(filepath.Join(dir, bootFile))
	return !clean && logs > 0 && (err != nil || boot == "" || strings.TrimSpace(string(prev)) != boot)
}

// recordBoot marks log dir as opened in boot, once its logs are loaded. A
// dir that may have lost writes forgets its broker epoch first: until the
// broker has registered as having lost them, a later crash in this boot
// must not make it name its old epoch, as if nothing had been lost.
func recordBoot(dir, boot string, lost bool) error {
	if lost {
		if err := os.Remove(filepath.Join(dir, brokerEpochFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("forget broker epoch in %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, bootFile), []byte(boot+"\n"), 0o644); err != nil {
		return fmt.Errorf("record boot id in %s: %w", dir, err)
	}
	return nil
}

// BrokerEpoch is the broker epoch the log dirs last served under
// (SetBrokerEpoch), to name as the previous one when registering again;
// -1 when a dir may have lost unflushed writes (LoadStats.LostUnflushed),
// or the dirs do not all name the same epoch (one is new, or was wiped).
func (m *Manager) BrokerEpoch() int64 {
	if m.loaded.LostUnflushed {
		return -1
	}
	epoch := int64(-1)
	for i, dir := range m.cfg.Dirs {
		b, err := os.ReadFile(filepath.Join(dir, brokerEpochFile))
		if err != nil {
			return -1
		}
		e, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || (i > 0 && e != epoch) {
			return -1
		}
		epoch = e
	}
	return epoch
}

// SetBrokerEpoch records the broker epoch the log dirs now serve under.
func (m *Manager) SetBrokerEpoch(epoch int64) error {
	var errs []error
	for _, dir := range m.cfg.Dirs {
		if err := os.WriteFile(filepath.Join(dir, brokerEpochFile), []byte(strconv.FormatInt(epoch, 10)+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("record broker epoch in %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
