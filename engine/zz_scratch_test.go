package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestZZScratch(t *testing.T) {
	db, _ := Open("")
	ctx := context.Background()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := db.ExecContext(ctx, "COPY (SELECT range AS i, 'x' || range AS s, NULL::INT AS n, '' AS e, true AS b, 1.5::DOUBLE AS d, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(range) AS ts FROM range(20000000)) TO '"+fifo+"' (FORMAT csv, HEADER false)")
		done <- err
	}()
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	n, lines := 0, 0
	first := ""
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			break
		}
		if lines < 2 {
			first += l
		}
		n += len(l)
		lines++
	}
	fmt.Println("err", <-done, "bytes", n, "lines", lines, time.Since(start))
	fmt.Print(first)
	var st syscall.Rusage
	syscall.Getrusage(0, &st)
	fmt.Println("maxrss MB", st.Maxrss/1024)
}
