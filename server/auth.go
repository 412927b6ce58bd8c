package server

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"
	"github.com/xdg-go/stringprep"
)

// Role is what a user or token may do.
type Role string

const (
	// Reader may query, plan and read statistics.
	Reader Role = "reader"
	// Writer may also register files.
	Writer Role = "writer"
)

// Auth is the server's users (PostgreSQL protocol, SCRAM-SHA-256) and
// bearer tokens (HTTP), read from an --auth file:
//
//	{
//	  "users":  [{"name": "alice", "role": "reader", "password": "SCRAM-SHA-256$4096:<salt>$<stored key>:<server key>"}],
//	  "tokens": [{"name": "loader", "role": "writer", "sha256": "<hex of the token's SHA-256>"}]
//	}
//
// The file holds no secret in the clear: passwords as PostgreSQL stores
// them (the SCRAM verifier, from `rocklake serve passwd`), tokens as their
// SHA-256 (from `rocklake serve token`), so a leaked file gives nobody a
// login.
type Auth struct {
	Users  []User  `json:"users"`
	Tokens []Token `json:"tokens"`
}

// User is one PostgreSQL-protocol login.
type User struct {
	Name     string `json:"name"`
	Role     Role   `json:"role"`
	Password string `json:"password"`

	cred scram.StoredCredentials
}

// Token is one HTTP bearer token, by its hash.
type Token struct {
	Name   string `json:"name"`
	Role   Role   `json:"role"`
	SHA256 string `json:"sha256"`

	sum []byte
}

// LoadAuth reads and checks an auth file. Its errors name the entry at
// fault, never a secret.
func LoadAuth(path string) (*Auth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	var a Auth
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	return &a, nil
}

func (a *Auth) check() error {
	if len(a.Users) == 0 && len(a.Tokens) == 0 {
		return errors.New("no users and no tokens: nobody could connect")
	}
	seen := map[string]bool{}
	for i := range a.Users {
		u := &a.Users[i]
		if err := checkEntry("user", i, u.Name, u.Role, seen); err != nil {
			return err
		}
		cred, err := ParseVerifier(u.Password)
		if err != nil {
			return fmt.Errorf("user %q: %w", u.Name, err)
		}
		u.cred = cred
	}
	seen = map[string]bool{}
	for i := range a.Tokens {
		t := &a.Tokens[i]
		if err := checkEntry("token", i, t.Name, t.Role, seen); err != nil {
			return err
		}
		sum, err := hex.DecodeString(t.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return fmt.Errorf("token %q: sha256 must be 64 hex digits (the token's SHA-256, as `rocklake serve token` prints it)", t.Name)
		}
		t.sum = sum
	}
	return nil
}

// checkEntry checks what users and tokens share: a name, once, and a
// role.
func checkEntry(kind string, i int, name string, role Role, seen map[string]bool) error {
	if name == "" {
		return fmt.Errorf("%s %d has no name", kind, i+1)
	}
	if seen[name] {
		return fmt.Errorf("%s %q is listed twice", kind, name)
	}
	seen[name] = true
	if err := CheckRole(role); err != nil {
		return fmt.Errorf("%s %q: %w", kind, name, err)
	}
	return nil
}

// CheckRole refuses a role other than reader and writer.
func CheckRole(r Role) error {
	switch r {
	case Reader, Writer:
		return nil
	}
	return fmt.Errorf("role must be %q or %q, not %q", Reader, Writer, r)
}

func (a *Auth) user(name string) (*User, bool) {
	for i := range a.Users {
		if a.Users[i].Name == name {
			return &a.Users[i], true
		}
	}
	return nil, false
}

// tokenRole finds the token a bearer secret is; every entry is compared,
// in constant time, so timing does not tell which prefix matched.
func (a *Auth) token(secret string) (*Token, bool) {
	sum := sha256.Sum256([]byte(secret))
	var found *Token
	for i := range a.Tokens {
		if subtle.ConstantTimeCompare(sum[:], a.Tokens[i].sum) == 1 {
			found = &a.Tokens[i]
		}
	}
	return found, found != nil
}

// scramIterations is PostgreSQL's default (scram_iterations).
const scramIterations = 4096

// Verifier makes the SCRAM-SHA-256 verifier of a password in PostgreSQL's
// form (what pg_authid.rolpassword holds), with a random salt.
func Verifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	// As PostgreSQL does: SASLprep the password, or use it as given when
	// it is not valid UTF-8 that SASLprep takes.
	if p, err := stringprep.SASLprep.Prepare(password); err == nil {
		password = p
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, enc(salt), enc(stored[:]), enc(serverKey)), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// ParseVerifier reads a verifier of PostgreSQL's form.
func ParseVerifier(v string) (scram.StoredCredentials, error) {
	bad := func(what string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{}, fmt.Errorf("password is not a SCRAM-SHA-256 verifier (%s); make one with `rocklake serve passwd`", what)
	}
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return bad("no SCRAM-SHA-256$ prefix")
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return bad("no keys")
	}
	iters, salt64, ok := strings.Cut(params, ":")
	if !ok {
		return bad("no salt")
	}
	n, err := strconv.Atoi(iters)
	if err != nil || n < 1 {
		return bad("iteration count")
	}
	stored64, server64, ok := strings.Cut(keys, ":")
	if !ok {
		return bad("no server key")
	}
	dec := base64.StdEncoding.DecodeString
	salt, err1 := dec(salt64)
	stored, err2 := dec(stored64)
	server, err3 := dec(server64)
	if err1 != nil || err2 != nil || err3 != nil || len(stored) != sha256.Size || len(server) != sha256.Size {
		return bad("base64 of salt or keys")
	}
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: n}, StoredKey: stored, ServerKey: server}, nil
}

// NewToken makes a random bearer token and its SHA-256 in hex (what the
// auth file holds).
func NewToken() (token, sum string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = "rlk_" + base64.RawURLEncoding.EncodeToString(b)
	s := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(s[:]), nil
}

// recordCertificate is cfg, cloned, noting in *got the certificate a
// handshake presents: tls-server-end-point channel binding is a hash of
// the server's own certificate, which crypto/tls reports to clients only.
// The choice is crypto/tls's own (GetCertificate, for a client naming a
// server or when there is no Certificates list; else the one certificate,
// or the first the client supports), made here because crypto/tls skips
// GetCertificate while Certificates is set; GetConfigForClient's configs
// are wrapped alike. The deprecated NameToCertificate is not consulted.
func recordCertificate(cfg *tls.Config, got **tls.Certificate) *tls.Config {
	c := cfg.Clone()
	if orig := c.GetConfigForClient; orig != nil {
		c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sub, err := orig(h)
			if sub == nil || err != nil {
				return sub, err
			}
			return recordCertificate(sub, got), nil
		}
	}
	certs, get := c.Certificates, c.GetCertificate
	if len(certs) == 0 && get == nil {
		return c // no certificate to present: the handshake fails as it would have
	}
	c.Certificates = nil
	c.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if get != nil && (len(certs) == 0 || h.ServerName != "") {
			cert, err := get(h)
			if err != nil || cert != nil {
				*got = cert
				return cert, err
			}
		}
		if len(certs) == 0 {
			return nil, errors.New("tls: no certificates configured")
		}
		pick := &certs[0]
		if len(certs) > 1 {
			for i := range certs {
				if h.SupportsCertificate(&certs[i]) == nil {
					pick = &certs[i]
					break
				}
			}
		}
		*got = pick
		return pick, nil
	}
	return c
}

// serverEndPoint is the tls-server-end-point channel binding data of a
// certificate (RFC 5929, 4.1): the hash of its DER form with the hash of
// its signature algorithm, SHA-256 for MD5 and SHA-1. A signature without
// such a hash (Ed25519) has no binding defined, and gets none.
func serverEndPoint(cert *tls.Certificate) ([]byte, error) {
	leaf := cert.Leaf
	if leaf == nil {
		if len(cert.Certificate) == 0 {
			return nil, errors.New("the certificate is empty")
		}
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, err
		}
	}
	var h hash.Hash
	switch leaf.SignatureAlgorithm {
	case x509.MD5WithRSA, x509.SHA1WithRSA, x509.DSAWithSHA1, x509.ECDSAWithSHA1,
		x509.SHA256WithRSA, x509.SHA256WithRSAPSS, x509.ECDSAWithSHA256, x509.DSAWithSHA256:
		h = sha256.New()
	case x509.SHA384WithRSA, x509.SHA384WithRSAPSS, x509.ECDSAWithSHA384:
		h = sha512.New384()
	case x509.SHA512WithRSA, x509.SHA512WithRSAPSS, x509.ECDSAWithSHA512:
		h = sha512.New()
	default:
		return nil, fmt.Errorf("tls-server-end-point is not defined for a certificate signed with %v", leaf.SignatureAlgorithm)
	}
	h.Write(leaf.Raw)
	return h.Sum(nil), nil
}
