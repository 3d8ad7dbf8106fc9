//go:build !linux

package server

import "net"

// unreadFunc: elsewhere the unread byte count is unknown.
func unreadFunc(net.Conn) func() (int, bool) { return nil }
