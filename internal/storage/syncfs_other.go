//go:build !linux

package storage

// shutdownSyncer is nil without syncfs(2): a shutdown fsyncs file by file.
func shutdownSyncer() func(dir string) error { return nil }
