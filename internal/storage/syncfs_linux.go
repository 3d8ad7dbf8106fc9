package storage

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shutdownSyncer returns syncFS where syncfs(2) reports the errors of the
// writeback it waits for (Linux 5.8 and later); older kernels return 0
// even when pages were lost, so there a shutdown fsyncs file by file.
func shutdownSyncer() func(dir string) error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil
	}
	if !syncfsReportsErrors(utsString(u.Release[:])) {
		return nil
	}
	return syncFS
}

// syncFS makes everything written to dir's filesystem durable: file data,
// sizes and directory entries, of every file at once, in one journal
// commit where per-file fsyncs would make one each.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to syncfs it: %w", dir, err)
	}
	defer d.Close()
	sc, err := d.SyscallConn()
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		for {
			if serr = unix.Syncfs(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	if serr != nil {
		return fmt.Errorf("syncfs %s: %w", dir, serr)
	}
	return nil
}

// syncfsReportsErrors reports whether a kernel release ("6.1.0-13-amd64")
// is 5.8 or later.
func syncfsReportsErrors(release string) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1][:digits(parts[1])])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 8
}

// digits is the length of s's leading run of decimal digits.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// utsString reads a NUL-terminated utsname field.
func utsString(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
