// Package auth issues and checks the bearer tokens of offlinebox's HTTP API.
//
// A token is a JWT signed with HMAC-SHA256 under one configured secret. Its
// subject is the user id; an optional "dev" claim pins the token to one
// device. Only HS256 is accepted: a token that names another algorithm
// (including "none") is refused before its signature is looked at, so a
// forged header cannot downgrade the check. Every token must carry an
// expiry.
package auth
