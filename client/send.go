package client

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/wire"
)

// Outgoing is a message to send (POST /v1/messages); the sender is the
// token's user. Role is what a member_join gives: member, admin or owner
// (owners only give admin and owner; see the API's description of POST
// /v1/messages).
type Outgoing = wire.SendRequest

// Send hands a message to the pipeline. The answer (202) means it was
// accepted for sequencing; a resend with the same ClientMsgID gets the
// same seq.
func (c *Client) Send(ctx context.Context, m Outgoing) error {
	_, err := c.do(ctx, http.MethodPost, "/v1/messages", m, nil)
	return err
}

// Read marks conversations read up to the given seqs, for all of the
// user's devices.
func (c *Client) Read(ctx context.Context, items []AckItem) error {
	_, err := c.do(ctx, http.MethodPost, "/v1/read", map[string]any{"receipts": items}, nil)
	return err
}
