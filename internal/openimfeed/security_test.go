package openimfeed_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/msggate/msggate/internal/openimfeed"
	"github.com/msggate/msggate/internal/openimfeed/openimfeedtest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testPKI is a CA, a broker certificate for 127.0.0.1 and a client certificate, as files the
// way kafka.yml names them.
type testPKI struct {
	server                                tls.Certificate
	caPool                                *x509.CertPool
	caFile, clientCertFile, clientKeyFile string
}

const clientKeyPassword = "key-pass"

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		template := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	serverDER, serverKey := leaf(2, x509.ExtKeyUsageServerAuth)
	clientDER, clientKey := leaf(3, x509.ExtKeyUsageClientAuth)

	pki := testPKI{
		server:         tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey},
		caPool:         x509.NewCertPool(),
		caFile:         filepath.Join(dir, "ca.crt"),
		clientCertFile: filepath.Join(dir, "client.crt"),
		clientKeyFile:  filepath.Join(dir, "client.key"),
	}
	pki.caPool.AddCert(ca)
	writePEM(t, pki.caFile, &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	writePEM(t, pki.clientCertFile, &pem.Block{Type: "CERTIFICATE", Bytes: clientDER})
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	// kafka.yml clientKeyPwd: a legacy-encrypted PEM key, what OpenIM's clients decrypt.
	encrypted, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", keyDER, []byte(clientKeyPassword), x509.PEMCipherAES256) //nolint:staticcheck // the format kafka.yml means
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, pki.clientKeyFile, encrypted)
	return pki
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t *testing.T, path string, block *pem.Block) {
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFeedOverTLSAndSASL runs a Feed against a broker that requires TLS with a client
// certificate and SASL/PLAIN, configured from kafka.yml-style files (encrypted client key
// included); and checks that a wrong password stops Run with the broker's refusal.
func TestFeedOverTLSAndSASL(t *testing.T) {
	pki := newTestPKI(t)
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientCAs:    pki.caPool, ClientAuth: tls.RequireAndVerifyClientCert,
	}
	cluster := openimfeedtest.StartCluster(t, openimfeedtest.KafkaOptions{Username: "openim", Password: "s3cret", TLS: serverTLS})
	brokers := cluster.ListenAddrs()
	// kfake drops the connection on a wrong password; a Kafka broker answers
	// SASL_AUTHENTICATION_FAILED first (KIP-152), and that answer is what Run must stop on.
	cluster.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		if string(auth.SASLAuthBytes) != "\x00openim\x00wrong" {
			return nil, nil, false
		}
		resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: Invalid username or password"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	clientTLS, err := openimfeed.TLSFiles{
		CACert: pki.caFile, ClientCert: pki.clientCertFile, ClientKey: pki.clientKeyFile,
		ClientKeyPassword: clientKeyPassword,
	}.Config()
	if err != nil {
		t.Fatalf("TLSFiles.Config: %v", err)
	}
	producer := openimfeedtest.NewProducer(t, openimfeedtest.ProducerOptions{Brokers: brokers, Username: "openim", Password: "s3cret", TLS: clientTLS})
	pushGroupMessages(t, producer, 1, 1)

	var c collector
	startFeed(t, openimfeed.Options{Brokers: brokers, Username: "openim", Password: "s3cret", TLS: clientTLS, StartAtOldest: true}, c.apply)
	if seqs := seqsOf(c.waitFor(t, 1)); len(seqs) != 1 || seqs[0] != 1 {
		t.Errorf("over TLS and SASL applied seqs %v, want [1]", seqs)
	}

	wrong, err := openimfeed.Open(openimfeed.Options{Brokers: brokers, Username: "openim", Password: "wrong", TLS: clientTLS, StartAtOldest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err = wrong.Run(ctx, func(context.Context, []openimfeed.Change) error {
		t.Errorf("a Feed with a wrong password applied changes")
		return nil
	})
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("Run with a wrong password returned %v, want the broker's SASL authentication failure", err)
	}
}

func TestTLSFilesErrors(t *testing.T) {
	pki := newTestPKI(t)
	if _, err := (openimfeed.TLSFiles{CACert: pki.clientKeyFile}).Config(); err == nil {
		t.Errorf("a CA file without a certificate was accepted")
	}
	if _, err := (openimfeed.TLSFiles{ClientCert: pki.clientCertFile, ClientKey: pki.clientKeyFile, ClientKeyPassword: "wrong"}).Config(); err == nil {
		t.Errorf("a client key decrypted with the wrong password was accepted")
	}
	if _, err := (openimfeed.TLSFiles{ClientCert: pki.clientCertFile, ClientKey: pki.clientKeyFile}).Config(); err == nil {
		t.Errorf("an encrypted client key was accepted without its password")
	}
	cfg, err := openimfeed.TLSFiles{InsecureSkipVerify: true}.Config()
	if err != nil || !cfg.InsecureSkipVerify || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf("TLSFiles{InsecureSkipVerify} = %+v, %v; want only InsecureSkipVerify set", cfg, err)
	}
}
