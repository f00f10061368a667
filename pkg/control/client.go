package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// Client talks to anetd's control socket.
type Client struct {
	sock  string
	token string
	hc    *http.Client
}

// NewClient returns a client for the socket at sock using tok.
func NewClient(sock, tok string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		Proxy: nil, // a unix socket never goes through a proxy
	}
	return &Client{sock: sock, token: tok, hc: &http.Client{Transport: tr, Timeout: 5 * time.Minute}}
}

// RemoteError is an error answered by anetd.
type RemoteError struct {
	Status  int
	Code    reasons.Code
	Message string
}

func (e *RemoteError) Error() string { return e.Message }

// Reason is the code anetd gave.
func (e *RemoteError) Reason() reasons.Code { return e.Code }

// request is a request to anetd with the token and an optional JSON body.
func (c *Client) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://anetd"+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(TokenHeader, c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Do sends a request with an optional JSON body and decodes the JSON answer into out.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	req, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.sendError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return decodeAnswer(resp.StatusCode, http.StatusText(resp.StatusCode), data, out)
}
