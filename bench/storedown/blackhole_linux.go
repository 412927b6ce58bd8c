package main

import (
	"fmt"
	"net"
	"syscall"
)

// blackhole is a loopback address where connecting times out: a socket
// listening with a backlog of 0 that never accepts, its one queued
// connection taken, so that Linux drops every further SYN (as a host that
// is down or a firewall does). close releases it.
func blackhole() (addr string, close func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	if err := syscall.Listen(fd, 0); err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	addr = fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	return addr, func() { c.Close(); syscall.Close(fd) }, nil
}
