package obs

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The OTLP/HTTP exporter: the tracer's spans (tracer.go) encoded as OTLP
// protobuf (otlp_proto.go) and POSTed with net/http — what
// go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp does,
// without linking gRPC and the protobuf runtime (package doc, "Tracing",
// says why and what it costs).

// The exporter's variables (the OpenTelemetry specification's; each
// OTEL_EXPORTER_OTLP_TRACES_* one wins over its OTEL_EXPORTER_OTLP_* one).
const (
	EnvOTLPHeaders           = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvOTLPTracesHeaders     = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvOTLPTimeout           = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvOTLPTracesTimeout     = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvOTLPCompression       = "OTEL_EXPORTER_OTLP_COMPRESSION"
	EnvOTLPTracesCompression = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
	EnvOTLPProtocol          = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol    = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvOTLPCertificate       = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	EnvOTLPTracesCertificate = "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"
	EnvOTLPClientCert        = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
	EnvOTLPTracesClientCert  = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"
	EnvOTLPClientKey         = "OTEL_EXPORTER_OTLP_CLIENT_KEY"
	EnvOTLPTracesClientKey   = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"
)

// OTLP/HTTP defaults (specification: "OTLP Exporter Configuration").
const (
	defaultOTLPEndpoint = "http://localhost:4318"
	otlpTracesPath      = "/v1/traces"
	defaultOTLPTimeout  = 10 * time.Second
	otlpProtobuf        = "http/protobuf"
	otlpContentType     = "application/x-protobuf"
	otlpUserAgent       = "stela-otlp-exporter"
	// otlpMaxErrorBody bounds what is read of a refusal's body.
	otlpMaxErrorBody = 4 << 10
	// Retries of a retryable failure (429, 502, 503, 504, a transport
	// error): exponential backoff with jitter from otlpRetryFirst, capped
	// at otlpRetryMax, until the export's context or otlpRetryBudget ends.
	otlpRetryFirst  = 250 * time.Millisecond
	otlpRetryMax    = 5 * time.Second
	otlpRetryBudget = time.Minute
)

// otlpConfig is the exporter's configuration, read from the environment.
type otlpConfig struct {
	url     string
	headers http.Header
	timeout time.Duration
	gzip    bool
	tls     *tls.Config // nil: net/http's default
}

// otlpConfigFromEnv reads the OTEL_EXPORTER_OTLP_* variables through
// getenv (files named by the certificate variables through readFile). It
// refuses what this exporter does not do (gRPC, OTLP/JSON, a compression
// other than gzip) instead of sending something the collector cannot read.
func otlpConfigFromEnv(getenv func(string) string, readFile func(string) ([]byte, error)) (otlpConfig, error) {
	pick := func(signal, general string) (string, string) {
		if v := strings.TrimSpace(getenv(signal)); v != "" {
			return signal, v
		}
		return general, strings.TrimSpace(getenv(general))
	}
	c := otlpConfig{headers: http.Header{}, timeout: defaultOTLPTimeout}
	var errs []error

	// The signal's endpoint is used as is; the general one is a base URL
	// to which /v1/traces is appended.
	if v := strings.TrimSpace(getenv(EnvOTLPTracesEndpoint)); v != "" {
		u, err := parseOTLPURL(EnvOTLPTracesEndpoint, v)
		if err != nil {
			errs = append(errs, err)
		} else {
			if u.Path == "" {
				u.Path = "/"
			}
			c.url = u.String()
		}
	} else {
		v := strings.TrimSpace(getenv(EnvOTLPEndpoint))
		if v == "" {
			v = defaultOTLPEndpoint
		}
		u, err := parseOTLPURL(EnvOTLPEndpoint, v)
		if err != nil {
			errs = append(errs, err)
		} else {
			u.Path = strings.TrimSuffix(u.Path, "/") + otlpTracesPath
			c.url = u.String()
		}
	}

	if name, v := pick(EnvOTLPTracesProtocol, EnvOTLPProtocol); v != "" && v != otlpProtobuf {
		errs = append(errs, fmt.Errorf("%s=%q: this exporter sends %s only", name, v, otlpProtobuf))
	}
	switch name, v := pick(EnvOTLPTracesCompression, EnvOTLPCompression); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		errs = append(errs, fmt.Errorf("%s=%q (want gzip or none)", name, v))
	}
	if name, v := pick(EnvOTLPTracesTimeout, EnvOTLPTimeout); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(time.Hour/time.Millisecond) {
			errs = append(errs, fmt.Errorf("%s=%q (want milliseconds, 1..3600000)", name, v))
		} else {
			c.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	// Headers: "k1=v1,k2=v2", the values percent-encoded.
	if name, v := pick(EnvOTLPTracesHeaders, EnvOTLPHeaders); v != "" {
		for _, pair := range strings.Split(v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			val, err := url.PathUnescape(v)
			if !ok || k == "" || err != nil || strings.ContainsAny(k, " \t\r\n:") {
				errs = append(errs, fmt.Errorf("%s: bad entry %q (want key=value, the value percent-encoded)", name, pair))
				continue
			}
			c.headers.Set(k, strings.TrimSpace(val))
		}
	}

	// TLS: a CA bundle, a client certificate and its key (PEM files).
	var tc tls.Config
	if name, file := pick(EnvOTLPTracesCertificate, EnvOTLPCertificate); file != "" {
		pem, err := readFile(file)
		pool := x509.NewCertPool()
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			errs = append(errs, fmt.Errorf("%s=%q: no PEM certificate read (%v)", name, file, err))
		} else {
			tc.RootCAs = pool
		}
	}
	certName, certFile := pick(EnvOTLPTracesClientCert, EnvOTLPClientCert)
	keyName, keyFile := pick(EnvOTLPTracesClientKey, EnvOTLPClientKey)
	if (certFile == "") != (keyFile == "") {
		errs = append(errs, fmt.Errorf("%s and %s go together", certName, keyName))
	} else if certFile != "" {
		certPEM, err1 := readFile(certFile)
		keyPEM, err2 := readFile(keyFile)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err := errors.Join(err1, err2, err); err != nil {
			errs = append(errs, fmt.Errorf("%s / %s: %w", certName, keyName, err))
		} else {
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	if tc.RootCAs != nil || len(tc.Certificates) > 0 {
		c.tls = &tc
	}
	return c, errors.Join(errs...)
}

func parseOTLPURL(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL", name, v)
	}
	return u, nil
}

// otlpExporter sends spans as OTLP/HTTP protobuf.
type otlpExporter struct {
	cfg     otlpConfig
	client  *http.Client
	stopped atomic.Bool
	// sleep waits between retries (tests make it instant).
	sleep func(ctx context.Context, d time.Duration) error
}

var _ spanExporter = (*otlpExporter)(nil)

// newOTLPExporter returns the exporter the OTEL_EXPORTER_OTLP_* variables
// configure.
func newOTLPExporter(getenv func(string) string) (*otlpExporter, error) {
	cfg, err := otlpConfigFromEnv(getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	return newOTLPExporterFor(cfg), nil
}

func newOTLPExporterFor(cfg otlpConfig) *otlpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	return &otlpExporter{cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.timeout}, sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errOTLPRetryable marks a failure worth retrying; after, when set, is the
// collector's Retry-After.
type errOTLPRetryable struct {
	err   error
	after time.Duration
}

func (e *errOTLPRetryable) Error() string { return e.err.Error() }
func (e *errOTLPRetryable) Unwrap() error { return e.err }

// export sends spans in one request, retried on 429/502/503/504 and
// transport errors until ctx ends.
func (e *otlpExporter) export(ctx context.Context, spans []*spanRecord) error {
	if e.stopped.Load() {
		return errors.New("obs: OTLP exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	if e.cfg.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("obs: OTLP gzip: %w", err)
		}
		body = b.Bytes()
	}
	budget, cancel := context.WithTimeout(ctx, otlpRetryBudget)
	defer cancel()
	wait := otlpRetryFirst
	for {
		err := e.post(budget, body)
		var re *errOTLPRetryable
		if err == nil || !errors.As(err, &re) {
			return err
		}
		d := re.after
		if d <= 0 {
			d = wait/2 + rand.N(wait/2+1) // jitter: [wait/2, wait]
			wait = min(2*wait, otlpRetryMax)
		}
		if dl, ok := budget.Deadline(); ok && time.Until(dl) < d {
			return fmt.Errorf("obs: OTLP export gave up before the deadline: %w", err)
		}
		if serr := e.sleep(budget, d); serr != nil {
			return fmt.Errorf("obs: OTLP export: %w (last failure: %v)", serr, err)
		}
	}
}

// post sends one export request.
func (e *otlpExporter) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("obs: OTLP request: %w", err)
	}
	for k, vs := range e.cfg.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", otlpContentType)
	req.Header.Set("User-Agent", otlpUserAgent)
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("obs: OTLP export to %s: %w", e.cfg.url, err)
		}
		return &errOTLPRetryable{err: fmt.Errorf("obs: OTLP export to %s: %w", e.cfg.url, err)}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, otlpMaxErrorBody))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		// A partial success names the spans the collector rejected.
		if rejected, why := decodePartialSuccess(msg); rejected != 0 || why != "" {
			return fmt.Errorf("obs: OTLP collector rejected %d spans: %s", rejected, why)
		}
		return nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		re := &errOTLPRetryable{err: fmt.Errorf("obs: OTLP export to %s: %s", e.cfg.url, resp.Status)}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			re.after = time.Duration(s) * time.Second
		}
		return re
	default:
		return fmt.Errorf("obs: OTLP export to %s: %s: %s", e.cfg.url, resp.Status, bytes.TrimSpace(msg))
	}
}

// shutdown makes later exports fail.
func (e *otlpExporter) shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}
