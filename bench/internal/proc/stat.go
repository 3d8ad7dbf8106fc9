// Package proc starts the brokers under test as child processes and reads
// what the kernel counts for them: CPU time and resident memory.
package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTick = 100

// CPU is the user plus system time the process (all its threads) has used.
func CPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	return parseStatCPU(data)
}

// parseStatCPU takes utime and stime (fields 14 and 15) from a stat line.
// The command name (field 2) may hold spaces and parentheses, so fields
// are counted from after its last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without command: %q", data)
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line too short: %q", data)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat cpu field %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// CPUSum is the CPU time of several processes together (a cluster).
func CPUSum(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, p := range pids {
		c, err := CPU(p)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// RSS is the resident set size in bytes (VmRSS in /proc/PID/status).
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("pid %d: unexpected VmRSS line %q", pid, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("pid %d: VmRSS %q: %w", pid, fields[0], err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("pid %d: no VmRSS in status", pid)
}
