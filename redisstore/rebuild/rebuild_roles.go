package rebuild

import (
	"sort"
	"strconv"

	"github.com/offlinebox/offlinebox/schemas"
)

// The roles and past spans a rebuild replays from the history's join and
// leave records, the way lua/sequence.lua keeps them. The history keeps
// each join's role and each record's authority (schemas/clickhouse 006);
// rows written before that read as no role and the sender's authority, so
// from them a rebuilt group gets its founder as owner (the founding
// record's sender, or its first founder when the sender is not one) and
// the owners leaves handed over to, but neither the admins nor the owners
// joins gave (see DESIGN, "Roles live beside the members").

// joinRoles applies a join's role and, for the founding record, the owner.
func (r *memberReplay) joinRoles(e *schemas.Sequenced) {
	m := e.GetMessage()
	users := m.GetRecipients()
	for _, u := range users {
		switch m.GetRole() {
		case schemas.Role_ROLE_ADMIN:
			r.roles[u] = "a"
		case schemas.Role_ROLE_MEMBER:
			delete(r.roles, u)
		}
	}
	if m.GetRole() == schemas.Role_ROLE_OWNER && len(users) > 0 {
		r.setOwner(users[0])
	}
	if e.GetSeq() == 1 && len(users) > 0 {
		if _, ok := r.members[m.GetSender()]; ok && m.GetAuthority() != schemas.Authority_AUTHORITY_SYSTEM {
			r.setOwner(m.GetSender())
		} else {
			r.setOwner(users[0])
		}
	}
}

// leave removes the leavers, keeps their spans and hands ownership over.
func (r *memberReplay) leave(e *schemas.Sequenced) {
	owner := false
	for _, u := range e.GetMessage().GetRecipients() {
		j, ok := r.members[u]
		if !ok {
			continue
		}
		delete(r.members, u)
		span := strconv.FormatUint(j, 10) + "-" + strconv.FormatUint(e.GetSeq(), 10)
		r.past[u] = append(r.past[u], span)
		if n := len(r.past[u]); n > pastSpansKept {
			r.past[u] = r.past[u][n-pastSpansKept:]
		}
		owner = owner || r.roles[u] == "o"
		delete(r.roles, u)
	}
	if owner {
		r.handOver()
	}
}

// pastSpansKept is how many spans per former member the script keeps.
const pastSpansKept = 16

func (r *memberReplay) setOwner(u string) {
	for v, role := range r.roles {
		if role == "o" && v != u {
			r.roles[v] = "a"
		}
	}
	r.roles[u] = "o"
}

// handOver picks the admin of the lowest id, else the member who joined
// first (the lowest id on a tie).
func (r *memberReplay) handOver() {
	var cands []string
	for u, role := range r.roles {
		if role == "a" {
			cands = append(cands, u)
		}
	}
	if len(cands) > 0 {
		sort.Strings(cands)
	} else {
		for u := range r.members {
			cands = append(cands, u)
		}
		sort.Slice(cands, func(i, j int) bool {
			a, b := r.members[cands[i]], r.members[cands[j]]
			return a < b || (a == b && cands[i] < cands[j])
		})
	}
	if len(cands) > 0 {
		r.roles[cands[0]] = "o"
	}
}
