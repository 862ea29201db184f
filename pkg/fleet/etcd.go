package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/skillhost/skillhost/internal/fileio"
)

// EtcdConfig says how to reach etcd. Credentials come from files only
// (mode 0600), never from flags or the environment, and are never logged.
type EtcdConfig struct {
	// Endpoints are host:port pairs.
	Endpoints []string
	// Prefix is where the fleet's keys live, without a trailing slash
	// ("/skillhost" by default). Fleets sharing one etcd use different
	// prefixes.
	Prefix string
	// TLS turns on TLS to etcd (the etcds:// scheme, or any of the files
	// below). CAFile, when set, replaces the system roots; CertFile and
	// KeyFile give a client certificate.
	TLS                       bool
	CAFile, CertFile, KeyFile string
	// Username with PasswordFile is etcd's user authentication; TokenFile
	// holds a token instead. At most one of the two.
	Username     string
	PasswordFile string
	TokenFile    string
	// DialTimeout bounds the first connection (default 5 s).
	DialTimeout time.Duration
}

// DefaultPrefix is the key prefix when the URL has no path.
const DefaultPrefix = "/skillhost"

// ParseEtcdURL reads --state etcd://host:port[,host:port]/prefix (etcds://
// for TLS). A user name may stand before the host (etcd://user@host/…); a
// password may not: it goes in a file.
func ParseEtcdURL(s string) (EtcdConfig, error) {
	u, err := url.Parse(s)
	if err != nil {
		return EtcdConfig{}, fmt.Errorf("etcd URL: %w", err)
	}
	var c EtcdConfig
	switch u.Scheme {
	case "etcd":
	case "etcds":
		c.TLS = true
	default:
		return EtcdConfig{}, fmt.Errorf("etcd URL %q: scheme must be etcd:// or etcds://", s)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return EtcdConfig{}, fmt.Errorf("etcd URL: a password may not stand in the URL (it would show in process lists and logs); put it in a file with mode 0600 and pass --etcd-password-file")
		}
		c.Username = u.User.Username()
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return EtcdConfig{}, fmt.Errorf("etcd URL: no query or fragment expected")
	}
	var errs []error
	for _, ep := range strings.Split(u.Host, ",") {
		if _, port, err := net.SplitHostPort(ep); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("etcd URL: endpoint %q is not host:port", ep))
			continue
		}
		c.Endpoints = append(c.Endpoints, ep)
	}
	if err := errors.Join(errs...); err != nil {
		return EtcdConfig{}, err
	}
	c.Prefix = path.Clean("/" + strings.Trim(u.Path, "/"))
	if c.Prefix == "/" {
		c.Prefix = DefaultPrefix
	}
	return c, nil
}

// Dial connects to etcd, and checks the connection: a fleet host that
// cannot reach its store must say so at start, not at the first decision.
func Dial(cfg EtcdConfig) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	cc := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// The client's own log would be a second logging system; errors
		// come back to us as values.
		Logger: zap.NewNop(),
	}
	if cc.DialTimeout <= 0 {
		cc.DialTimeout = 5 * time.Second
	}
	var errs []error
	if cfg.PasswordFile != "" && cfg.TokenFile != "" {
		errs = append(errs, errors.New("etcd: give a password file or a token file, not both"))
	}
	if cfg.PasswordFile != "" {
		if cfg.Username == "" {
			errs = append(errs, errors.New("etcd: a password file needs a user name (etcd://user@host:port/…)"))
		}
		p, err := fileio.ReadSecret(cfg.PasswordFile, "etcd password file")
		if err != nil {
			errs = append(errs, err)
		}
		cc.Username, cc.Password = cfg.Username, p
	}
	if cfg.TokenFile != "" {
		tok, err := fileio.ReadSecret(cfg.TokenFile, "etcd token file")
		if err != nil {
			errs = append(errs, err)
		}
		cc.Token = tok
	}
	if cfg.TLS || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		t, err := tlsConfig(cfg.CAFile, cfg.CertFile, cfg.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("etcd TLS: %w", err))
		}
		cc.TLS = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cc.DialTimeout)
	defer cancel()
	if _, err := cli.Get(ctx, "health-check-of-skillhost", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s: cannot read: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return cli, nil
}

// tlsConfig builds a client TLS configuration from PEM files; every problem
// is reported at once.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	var errs []error
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("CA file: %w", err))
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("CA file %s holds no PEM certificate", caFile))
			}
			t.RootCAs = pool
		}
	}
	switch {
	case certFile != "" && keyFile != "":
		// Only the mode matters here: a key others may read is refused.
		if _, err := fileio.ReadSecret(keyFile, "key file"); err != nil {
			errs = append(errs, err)
			break
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("client certificate %s: %w", certFile, err))
		}
		t.Certificates = []tls.Certificate{cert}
	case certFile != "" || keyFile != "":
		errs = append(errs, errors.New("a client certificate needs both the cert file and the key file"))
	}
	return t, errors.Join(errs...)
}
