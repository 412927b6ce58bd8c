package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// A served directory catalog is held open by its server, so another
// process cannot open it. The server listens on a Unix socket in the
// catalog directory (socketName, owner-only, as the directory's files
// are: reaching it takes what reading the catalog takes), and the
// commands below, given that directory, run in the server instead: the
// client sends its command line (and standard input), the server runs the
// same command on its open catalog and engine and streams back what it
// prints, then its standard error and exit status.

// socketName is the server's socket in a served catalog directory.
const socketName = "rocklake.sock"

// forwardable are the commands that run through a server.
var forwardable = map[string]bool{
	"rocklake query": true, "rocklake plan": true, "rocklake stats": true, "rocklake snapshots": true,
	"rocklake add": true, "rocklake files": true, "rocklake table list": true, "rocklake table describe": true,
	"rocklake table alter": true,
}

// forwardedExit ends a command that ran in a server: its output is
// printed, and the process exits with the server-side status.
type forwardedExit struct{ code int }

func (e forwardedExit) Error() string { return fmt.Sprintf("exit status %d (in the server)", e.code) }

// mayBeServed says, from a stat of its socket and no dial, whether a
// server holds the catalog directory. A socket left by a server that died
// makes it wrong; socketFor tells.
func mayBeServed(catalog string) bool {
	if pgkv.IsLocation(catalog) {
		return false
	}
	st, err := os.Stat(filepath.Join(catalog, socketName))
	return err == nil && st.Mode()&os.ModeSocket != 0
}

// socketFor is the live server socket of a catalog directory, or "".
func socketFor(catalog string) string {
	if !mayBeServed(catalog) {
		return ""
	}
	sock := filepath.Join(catalog, socketName)
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return "" // a socket left by a server that died: open the catalog
	}
	c.Close()
	return sock
}

// forward runs a command in the server holding its catalog, when there is
// one; forwarded is false when the command runs here.
func forward(cmd *cobra.Command, g *globals, args []string) (forwarded bool, err error) {
	if g.served != nil || !forwardable[cmd.CommandPath()] {
		return false, nil
	}
	sock := socketFor(g.catalog)
	if sock == "" {
		return false, nil
	}
	line, stdin, err := commandLine(cmd, args)
	if err != nil {
		return true, err
	}
	body, _ := json.Marshal(cliRequest{Args: line, Stdin: stdin})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequestWithContext(cmd.Context(), "POST", "http://rocklake/v1/cli", bytes.NewReader(body))
	if err != nil {
		return true, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return true, fmt.Errorf("the catalog is served by a rocklake server (%s), which did not answer: %w", sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return true, fmt.Errorf("the rocklake server serving %s refused the command: %s", g.catalog, strings.TrimSpace(string(b)))
	}
	if _, err := io.Copy(cmd.OutOrStdout(), resp.Body); err != nil {
		return true, fmt.Errorf("reading the server's output: %w", err)
	}
	stderr, _ := base64.StdEncoding.DecodeString(resp.Trailer.Get("Rocklake-Stderr"))
	cmd.ErrOrStderr().Write(stderr)
	code, err := strconv.Atoi(resp.Trailer.Get("Rocklake-Exit"))
	if err != nil {
		return true, errors.New("the server's answer ended early (no exit status)")
	}
	return true, forwardedExit{code}
}

type cliRequest struct {
	Args  []string `json:"args"`
	Stdin string   `json:"stdin"`
}

// commandLine rebuilds a command line the server can run: the command's
// path, the flags given (but --catalog: the server's is the one), and the
// arguments, with local files made absolute (add) or sent along (query's
// -f and -).
func commandLine(cmd *cobra.Command, args []string) (line []string, stdin string, err error) {
	line = strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "rocklake "))
	readStdin := false
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "catalog" || err != nil {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if cmd.CommandPath() == "rocklake query" && f.Name == "file" {
			if v == "-" {
				readStdin = true
			} else {
				b, rerr := os.ReadFile(v)
				if rerr != nil {
					err = rerr
					return
				}
				stdin, v = string(b), "-"
			}
		}
		line = append(line, "--"+f.Name+"="+v)
	})
	if err != nil {
		return nil, "", err
	}
	pos := make([]string, len(args))
	for i, a := range args {
		switch {
		case cmd.CommandPath() == "rocklake query" && a == "-":
			readStdin = true
		case cmd.CommandPath() == "rocklake add" && i > 0 && !strings.Contains(a, "://") && !filepath.IsAbs(a):
			if a, err = filepath.Abs(a); err != nil {
				return nil, "", err
			}
		}
		pos[i] = a
	}
	if readStdin {
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return nil, "", fmt.Errorf("reading standard input: %w", err)
		}
		stdin = string(b)
	}
	// After "--", an argument that starts with a dash stays an argument.
	line = append(append(line, "--"), pos...)
	return line, stdin, nil
}

// cliHandler runs forwarded commands on a server's open lake.
func cliHandler(lake *rocklake.Lake) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req cliRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		g := &globals{served: lake}
		root := newRootCmdWith(g)
		if c, _, err := root.Find(req.Args); err != nil || !forwardable[c.CommandPath()] {
			http.Error(w, fmt.Sprintf("%q does not run through a server", strings.Join(req.Args, " ")), http.StatusBadRequest)
			return
		}
		w.Header().Set("Trailer", "Rocklake-Exit, Rocklake-Stderr")
		w.Header().Set("Content-Type", "application/octet-stream")
		var stderr bytes.Buffer
		root.SetArgs(req.Args)
		root.SetIn(strings.NewReader(req.Stdin))
		root.SetOut(flushWriter{w})
		root.SetErr(&stderr)
		code := 0
		if err := root.ExecuteContext(r.Context()); err != nil {
			reportError(&stderr, err, jsonRequested(g.format, req.Args), req.Args)
			code = exitCode(err)
		}
		w.Header().Set("Rocklake-Exit", strconv.Itoa(code))
		w.Header().Set("Rocklake-Stderr", base64.StdEncoding.EncodeToString(stderr.Bytes()))
	})
}

// flushWriter sends output as the command prints it.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}
