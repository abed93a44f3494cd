package api

import (
	"github.com/offlinebox/offlinebox/wire"
	"net/http"
	"sort"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
)

// maxMembersListed bounds the names one answer of GET
// /v1/conversations/{conv}/members carries; count is always the whole.
const maxMembersListed = 500

// members answers GET /v1/conversations/{conv}/members: who belongs to a
// conversation now, in byte order, for its members (and those who left,
// who may still read what they were sent).
func (s *Server) members(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	if err := onlyParams(r.URL.Query()); err != nil {
		return 0, nil, err
	}
	main := s.router.Main()
	access, err := main.ConversationBounds(r.Context(), id.User, []string{conv})
	if err != nil {
		return 0, nil, err
	}
	if a := access[conv]; !a.Member && !a.Left {
		return 0, nil, forbidden("not a member of conversation %q", conv)
	}
	held, err := main.Members(r.Context(), conv)
	if err != nil {
		return 0, nil, err
	}
	out := wire.Members{ConvID: conv, Count: len(held), Members: make([]string, 0, min(len(held), maxMembersListed))}
	for u := range held {
		out.Members = append(out.Members, u)
	}
	sort.Strings(out.Members)
	if len(out.Members) > maxMembersListed {
		out.Members, out.Truncated = out.Members[:maxMembersListed], true
	}
	return http.StatusOK, out, nil
}
