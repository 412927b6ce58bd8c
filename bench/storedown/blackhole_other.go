//go:build !linux

package main

import "errors"

func blackhole() (string, func(), error) {
	return "", nil, errors.New("connect timeouts are simulated on Linux only")
}
