package pgkv_test

import (
	"context"
	"os"
	"testing"

	"rocklake/internal/pgtest"
	"rocklake/kv"
	"rocklake/kv/kvtest"
	"rocklake/kv/pgkv"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestConformance(t *testing.T) {
	urls := map[kv.Store]string{}
	kvtest.Run(t, kvtest.Backend{
		Open: func(t *testing.T) kv.Store {
			url := pgtest.URL(t)
			s, err := pgkv.Init(context.Background(), url, pgkv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			urls[s] = url
			t.Cleanup(func() { s.Close() })
			return s
		},
		Reopen: func(t *testing.T, s kv.Store) kv.Store {
			url := urls[s]
			s.Close()
			s2, err := pgkv.Open(context.Background(), url, pgkv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s2.Close() })
			return s2
		},
	})
}
