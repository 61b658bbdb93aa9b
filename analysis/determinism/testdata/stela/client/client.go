// Package client is a stub of Stela's HTTP client for the analyzer's tests.
package client

import (
	"context"

	"github.com/stela-dev/stela/core"
)

type Client struct{}

type Option func(*Client) error

func New(baseURL string, opts ...Option) (*Client, error) { return &Client{}, nil }

func (c *Client) Get(ctx context.Context, id core.ExecutionId) (*core.ExecutionLog, error) {
	return nil, nil
}
