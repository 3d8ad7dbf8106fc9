package localcluster

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Finding who opened a loopback connection. Brokers reach each other at
// one advertised address per node, so a proxy in front of a node sees
// every peer, and every client, connect from 127.0.0.1 alike. The kernel
// knows better: the connecting socket is a line of /proc/net/tcp (its
// local address is the remote address the proxy accepted), and its inode
// is a descriptor of exactly one process. That tells the proxy which node
// (or this process) a connection comes from, without any help from the
// broker.

// listenerInode finds the inode of the listening TCP socket bound to addr.
func listenerInode(addr *net.TCPAddr) (uint64, error) {
	return findSocket(addr, nil)
}

// socketInode finds the inode of the TCP socket whose local address is
// local and whose peer is remote.
func socketInode(local, remote *net.TCPAddr) (uint64, error) {
	return findSocket(local, remote)
}

// findSocket finds the inode of the TCP socket whose local address is
// local and whose peer is remote (nil: a listening socket), in
// /proc/net/tcp (IPv4) or tcp6.
func findSocket(local, remote *net.TCPAddr) (uint64, error) {
	want4 := local.IP.To4() != nil
	file := "/proc/net/tcp"
	if !want4 {
		file = "/proc/net/tcp6"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	l := procAddr(local)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[1] != l {
			continue
		}
		if remote == nil && f[3] != "0A" { // TCP_LISTEN
			continue
		}
		if remote != nil && f[2] != procAddr(remote) {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || ino == 0 {
			continue // a socket in TIME_WAIT has no inode
		}
		return ino, nil
	}
	return 0, fmt.Errorf("no socket %s -> %s in %s", local, remote, file)
}

// procAddr renders an address as /proc/net/tcp does: the IP's bytes as
// little-endian 32-bit words in hex, a colon, the port in hex.
func procAddr(a *net.TCPAddr) string {
	var sb strings.Builder
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	for w := 0; w+4 <= len(ip); w += 4 {
		fmt.Fprintf(&sb, "%02X%02X%02X%02X", ip[w+3], ip[w+2], ip[w+1], ip[w])
	}
	fmt.Fprintf(&sb, ":%04X", a.Port)
	return sb.String()
}

// holdsSocket reports whether process pid has the socket inode open.
func holdsSocket(pid int, inode uint64) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("socket:[%d]", inode)
	for _, e := range ents {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == want {
			return true
		}
	}
	return false
}

// connOwner returns which of the candidate processes opened the accepted
// connection c (the key of pids that holds it).
func connOwner(c net.Conn, pids map[int]int32) (int32, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("not a TCP connection: %s", c.RemoteAddr())
	}
	ino, err := socketInode(remote, local)
	if err != nil {
		return 0, err
	}
	for pid, id := range pids {
		if holdsSocket(pid, ino) {
			return id, nil
		}
	}
	return 0, fmt.Errorf("connection from %s: no process of the cluster holds it", remote)
}
