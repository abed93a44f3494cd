package api

import (
	"github.com/offlinebox/offlinebox/wire"
	"net/http"
	"slices"
	"testing"
)

// GET /v1/conversations/{conv}/members names a group's members and their
// count to a member, and refuses anyone else and bad input.
func TestMembersNamesAGroupsMembersToAMemberOnly(t *testing.T) {
	e := newEnv(t, envOptions{})
	smallGroup(t, e)
	var m wire.Members
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/members", e.token("ann", ""), nil, &m)
	if m.ConvID != "g" || m.Count != 2 || !slices.Equal(m.Members, []string{"ann", "bob"}) || m.Truncated {
		t.Fatalf("members of g: %+v, want ann and bob", m)
	}
	tests := []struct {
		name, path, user string
		status           int
	}{
		{"not a member", "/v1/conversations/g/members", "zed", http.StatusForbidden},
		{"unknown parameter", "/v1/conversations/g/members?limit=3", "ann", http.StatusBadRequest},
		{"bad conv", "/v1/conversations/a:b/members", "ann", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := e.call("GET", tt.path, e.token(tt.user, ""), nil); status != tt.status {
				t.Fatalf("GET %s as %s: %d %s, want %d", tt.path, tt.user, status, body, tt.status)
			}
		})
	}
}
