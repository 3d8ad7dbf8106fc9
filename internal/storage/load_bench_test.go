package storage

import (
	"fmt"
	"testing"
)

// crashedLog writes size bytes of 16 KiB batches into one log and closes
// it as a crash would (nothing flushed), so opening it recovers all of it.
func crashedLog(b *testing.B, dir string, size int64) {
	batch := benchBatch(b)
	l, err := OpenLog(dir, testConfig(), 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	for n := int64(0); n < size; n += int64(len(batch)) {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.crash(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecover64MiB opens a crashed log of 64 MiB from recovery point
// 0: every batch is read, CRC-checked and indexed again (page cache).
func BenchmarkRecover64MiB(b *testing.B) {
	dir := b.TempDir()
	const size = 64 << 20
	crashedLog(b, dir, size)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := OpenLog(dir, testConfig(), 0, 0, false, quietLogger())
		if err != nil {
			b.Fatal(err)
		}
		if err := l.crash(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadManyLogs loads a log dir of 2,000 small partitions through
// the Manager, after a crash (each log's tail recovered) and after a clean
// shutdown (nothing read but the last index entry's tail).
func BenchmarkLoadManyLogs(b *testing.B) {
	for _, clean := range []bool{false, true} {
		b.Run(fmt.Sprintf("clean=%v", clean), func(b *testing.B) {
			dir := b.TempDir()
			const parts = 2000
			batch := benchBatch(b)
			m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger())
			if err != nil {
				b.Fatal(err)
			}
			for p := range parts {
				l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(p)}, testConfig())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.Append(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := m.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger())
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if !clean {
					// Leave it as a crash would: no clean-shutdown marker.
					for _, l := range m.snapshot() {
						if err := l.crash(); err != nil {
							b.Fatal(err)
						}
					}
				} else if err := m.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkCloseManyLogs closes a Manager of 2,000 empty partitions, as
// created (every file new) and as reopened after a clean shutdown
// (nothing changed since the files were last made durable).
func BenchmarkCloseManyLogs(b *testing.B) {
	const parts = 2000
	for _, reopened := range []bool{false, true} {
		b.Run(fmt.Sprintf("reopened=%v", reopened), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger())
				if err != nil {
					b.Fatal(err)
				}
				for p := range parts {
					if _, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(p)}, testConfig()); err != nil {
						b.Fatal(err)
					}
				}
				if reopened {
					if err := m.Close(); err != nil {
						b.Fatal(err)
					}
					if m, err = OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: testConfig()}, quietLogger()); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := m.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
