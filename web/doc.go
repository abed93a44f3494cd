// Package web is the browser client: one page (plain HTML, CSS and
// JavaScript, embedded) that signs in with a token, draws the
// conversation list, opens a conversation newest first and loads older
// messages through the Redis window and then history, sends, and keeps
// up to date by syncing. Its protocol code is the JavaScript client
// (clients/js), served as /static/offlinebox.js from that one file; storage and
// drawing stay here. A form starts a direct conversation or founds a
// group. What it received is kept in IndexedDB under the
// same unique keys as the Go SDK's database, (conv_id, epoch, seq) and
// (conv_id, client_msg_id), and acked only after the transaction that
// stored it completed, so a reload does not pull it again.
package web
