package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLostUnflushedNeedsAReboot: a dir not shut down cleanly may have lost
// unflushed writes only if the machine restarted since it was opened; a
// dir that did forgets its broker epoch until one is set again.
func TestLostUnflushedNeedsAReboot(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	open := func(boot string) *Manager {
		t.Helper()
		m, err := OpenManager(ManagerConfig{Dirs: dirs, Defaults: testConfig(), BootID: boot}, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// crash closes m and takes its clean-shutdown markers away, as a
	// crash after the last flush would have left the dirs.
	crash := func(m *Manager) {
		t.Helper()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if err := os.Remove(filepath.Join(d, cleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(m *Manager, lost bool, epoch int64) {
		t.Helper()
		if got := m.LoadStats().LostUnflushed; got != lost {
			t.Fatalf("LostUnflushed = %v, want %v", got, lost)
		}
		if got := m.BrokerEpoch(); got != epoch {
			t.Fatalf("BrokerEpoch = %d, want %d", got, epoch)
		}
	}

	m := open("boot-a")
	want(m, false, -1) // new dirs: nothing to lose, no epoch yet
	for _, tp := range []TopicPartition{{"t", 0}, {"t", 1}} {
		l, err := m.GetOrCreate(tp, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, makeBatch(t, 2, 10, 1, "x"), 0)
	}
	if err := m.SetBrokerEpoch(7); err != nil {
		t.Fatal(err)
	}
	crash(m)

	m = open("boot-a") // killed, same boot: the page cache kept everything
	want(m, false, 7)
	crash(m)

	m = open("boot-b") // the machine restarted
	want(m, true, -1)
	crash(m)

	m = open("boot-b") // a crash before registering again keeps it unknown
	want(m, false, -1)
	if err := m.SetBrokerEpoch(9); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m = open("boot-c") // clean shutdown: a reboot costs nothing
	want(m, false, 9)
	crash(m)

	// A dir whose epoch file is gone (wiped, or new) names no epoch.
	if err := os.Remove(filepath.Join(dirs[1], brokerEpochFile)); err != nil {
		t.Fatal(err)
	}
	m = open("boot-c")
	defer m.Close()
	want(m, false, -1)
}
