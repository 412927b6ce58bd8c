package server_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/big"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/rocklake/rocklake/server"
)

// certWith is a self-signed certificate for 127.0.0.1 with key and
// signature algorithm sig (0: the key's default).
func certWith(t *testing.T, key crypto.Signer, sig x509.SignatureAlgorithm) *tls.Config {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "rocklake binding test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, SignatureAlgorithm: sig,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

func authFixture(t *testing.T, tc *tls.Config) *fixture {
	t.Helper()
	path, _, _ := authFile(t)
	auth, err := server.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig()
	cfg.Auth, cfg.TLS = auth, tc
	return newFixture(t, cfg)
}

// Under TLS the server offers SCRAM-SHA-256-PLUS with tls-server-end-point
// binding, the hash of its own certificate by the certificate's signature
// hash: pgx and psql with channel_binding=require log in over
// certificates signed with SHA-256, SHA-384 and SHA-512, a wrong password
// still fails, and a certificate without a defined binding (Ed25519) is
// served without PLUS.
func TestChannelBinding(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	psql, _ := exec.LookPath("psql")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		sig  x509.SignatureAlgorithm
	}{
		{"ECDSA-SHA256", p256, 0},
		{"ECDSA-SHA384", p384, x509.ECDSAWithSHA384},
		{"RSA-SHA512", rsaKey, x509.SHA512WithRSA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := authFixture(t, certWith(t, tc.key, tc.sig))
			c, err := pgx.Connect(ctx, f.pgURL("alice", alicePassword, "require")+"&channel_binding=require")
			if err != nil {
				t.Fatalf("pgx with channel_binding=require: %v", err)
			}
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
				t.Errorf("query: %d %v", n, err)
			}
			c.Close(ctx)
			_, err = pgx.Connect(ctx, f.pgURL("alice", "wrong", "require")+"&channel_binding=require")
			if code := sqlstate(err); code != "28P01" {
				t.Errorf("a wrong password with channel binding: %v", err)
			}
			if psql == "" {
				return
			}
			for _, pw := range []string{bobPassword, "wrong"} {
				cmd := exec.Command(psql, "-X", "-A", "-t", "-c", "SELECT count(*) FROM t", f.pgURL("bob", "", "require")+"&channel_binding=require")
				cmd.Env = append(cmd.Environ(), "PGPASSWORD="+pw, "PGCONNECT_TIMEOUT=10")
				out, err := cmd.CombinedOutput()
				if pw == bobPassword && (err != nil || strings.TrimSpace(string(out)) != "300") {
					t.Errorf("psql with channel_binding=require: %q %v", out, err)
				}
				if pw == "wrong" && (err == nil || !strings.Contains(string(out), "password authentication failed")) {
					t.Errorf("psql with a wrong password: %q %v", out, err)
				}
			}
		})
	}
	t.Run("Ed25519", func(t *testing.T) {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		f := authFixture(t, certWith(t, key, 0))
		if _, err := pgx.Connect(ctx, f.pgURL("alice", alicePassword, "require")+"&channel_binding=require"); err == nil {
			t.Error("channel binding was claimed over a certificate RFC 5929 defines none for")
		}
		c, err := pgx.Connect(ctx, f.pgURL("alice", alicePassword, "require"))
		if err != nil {
			t.Fatalf("SCRAM without binding: %v", err)
		}
		c.Close(ctx)
	})
}

// scramOverTLS logs in as alice by hand over TLS: mech is the mechanism
// named, conv the client's conversation (its GS2 flag and binding data).
// It returns the mechanisms offered and the server's last answer.
func scramOverTLS(t *testing.T, f *fixture, mech string, conv func(state *tls.ConnectionState) *scram.ClientConversation) ([]string, pgproto3.BackendMessage) {
	t.Helper()
	raw, err := net.DialTimeout("tcp", f.srv.PGAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(30 * time.Second))
	ssl := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), 80877103)
	if _, err := raw.Write(ssl); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := raw.Read(b); err != nil || b[0] != 'S' {
		t.Fatalf("SSLRequest: %q %v", b, err)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	state := c.ConnectionState()
	fe := pgproto3.NewFrontend(c, c)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "alice"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	sasl, ok := msg.(*pgproto3.AuthenticationSASL)
	if !ok {
		t.Fatalf("expected SASL, got %#v", msg)
	}
	mechs := slices.Clone(sasl.AuthMechanisms)
	cc := conv(&state)
	first, _ := cc.Step("")
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: mech, Data: []byte(first)})
	fe.Flush()
	if msg, err = fe.Receive(); err != nil {
		t.Fatal(err)
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		return mechs, msg
	}
	final, err := cc.Step(string(cont.Data))
	if err != nil {
		t.Fatal(err)
	}
	fe.Send(&pgproto3.SASLResponse{Data: []byte(final)})
	fe.Flush()
	if msg, err = fe.Receive(); err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.(*pgproto3.AuthenticationSASLFinal); ok {
		if msg, err = fe.Receive(); err != nil {
			t.Fatal(err)
		}
	}
	return mechs, msg
}

// A client's binding is checked, not taken on trust: the right binding
// logs in; wrong binding data, a PLUS login that does not bind, a plain
// one that binds, and a client claiming the server offered no PLUS are
// each refused.
func TestChannelBindingTampered(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	f := authFixture(t, certWith(t, key, x509.ECDSAWithSHA384))
	client, err := scram.SHA256.NewClient("", alicePassword, "")
	if err != nil {
		t.Fatal(err)
	}
	endPoint := func(state *tls.ConnectionState) scram.ChannelBinding {
		der := state.PeerCertificates[0].Raw
		sum := sha512.Sum384(der)
		return scram.ChannelBinding{Type: scram.ChannelBindingTLSServerEndpoint, Data: sum[:]}
	}
	for _, tc := range []struct {
		name, mech string
		conv       func(*tls.ConnectionState) *scram.ClientConversation
		ok         bool
	}{
		{"right binding", "SCRAM-SHA-256-PLUS", func(s *tls.ConnectionState) *scram.ClientConversation {
			return client.NewConversationWithChannelBinding(endPoint(s))
		}, true},
		{"plain SCRAM, no binding", "SCRAM-SHA-256", func(*tls.ConnectionState) *scram.ClientConversation { return client.NewConversation() }, true},
		{"wrong binding data", "SCRAM-SHA-256-PLUS", func(s *tls.ConnectionState) *scram.ClientConversation {
			// SHA-256 of the certificate: what a client hashing by the
			// wrong algorithm, or a man in the middle, would send.
			sum := sha256.Sum256(s.PeerCertificates[0].Raw)
			return client.NewConversationWithChannelBinding(scram.ChannelBinding{Type: scram.ChannelBindingTLSServerEndpoint, Data: sum[:]})
		}, false},
		{"PLUS without binding", "SCRAM-SHA-256-PLUS", func(*tls.ConnectionState) *scram.ClientConversation { return client.NewConversation() }, false},
		{"binding under the plain name", "SCRAM-SHA-256", func(s *tls.ConnectionState) *scram.ClientConversation {
			return client.NewConversationWithChannelBinding(endPoint(s))
		}, false},
		{"claims no PLUS was offered", "SCRAM-SHA-256", func(*tls.ConnectionState) *scram.ClientConversation {
			return client.NewConversationAdvertisingChannelBinding()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mechs, last := scramOverTLS(t, f, tc.mech, tc.conv)
			if !slices.Equal(mechs, []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}) {
				t.Errorf("mechanisms offered: %v", mechs)
			}
			_, in := last.(*pgproto3.AuthenticationOk)
			if in != tc.ok {
				t.Errorf("logged in %v, want %v: %#v", in, tc.ok, last)
			}
			if er, isErr := last.(*pgproto3.ErrorResponse); !tc.ok && (!isErr || er.Severity != "FATAL" || er.Code != "08P01" || !strings.Contains(er.Message, "channel binding")) {
				t.Errorf("refusal: %#v", last)
			}
		})
	}
}
