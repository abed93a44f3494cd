package checker

import (
	"slices"
	"sort"

	"github.com/offlinebox/offlinebox/schemas"
)

// refuse says why a group's authority refuses the record (the reason as
// the fanout dead-letters it), or "" when it gets a seq. It models the
// rules of redisstore/lua/sequence.lua independently: the first record
// founds the group with its sender as owner; then only members send, only
// the owner and admins add or remove others (an admin plain members only),
// anyone leaves by themselves, only the owner gives the admin or owner
// role. Records of system authority skip the role checks. A record it
// accepts updates the roles.
func (c *ConvTruth) refuse(m *schemas.Message) string {
	if m.GetConvType() != schemas.ConvType_CONV_TYPE_GROUP {
		return ""
	}
	why := c.check(m)
	if why == "" {
		c.applyRoles(m, uint64(len(c.IDs))+1)
	}
	return why
}

func (c *ConvTruth) roleOf(u string) string {
	if _, ok := c.Members[u]; !ok {
		return ""
	}
	if r := c.Roles[u]; r != "" {
		return r
	}
	return "m"
}

func (c *ConvTruth) check(m *schemas.Message) string {
	kind, sender, users := m.GetKind(), m.GetSender(), m.GetRecipients()
	system := m.GetAuthority() == schemas.Authority_AUTHORITY_SYSTEM
	if len(c.IDs) == 0 {
		switch {
		case kind == schemas.Kind_KIND_MESSAGE && !system:
			return ""
		case kind != schemas.Kind_KIND_MEMBER_JOIN:
			return "kind: a group begins with a member_join naming its founders, or a message founding it alone"
		case !system && !slices.Contains(users, sender):
			return "recipients: the founders of a group include its sender, who owns it"
		case m.GetRole() != schemas.Role_ROLE_UNSPECIFIED:
			return "role: a group's founders are its owner and members"
		}
		return ""
	}
	if system {
		return ""
	}
	sr := c.roleOf(sender)
	switch {
	case sr == "":
		return "sender: is not a member of the group"
	case kind == schemas.Kind_KIND_MESSAGE:
		return ""
	case kind == schemas.Kind_KIND_MEMBER_LEAVE:
		if len(users) == 1 && users[0] == sender {
			return ""
		}
		if sr == "m" {
			return "sender: only the owner or an admin removes others"
		}
		for _, u := range users {
			if ur := c.roleOf(u); u != sender && sr != "o" && ur != "" && ur != "m" {
				return "recipients: " + u + " is the owner or an admin: only the owner removes them"
			}
		}
		return ""
	}
	if sr == "m" {
		return "sender: only the owner or an admin adds members"
	}
	rl := m.GetRole()
	if rl == schemas.Role_ROLE_UNSPECIFIED {
		return ""
	}
	if sr != "o" && rl != schemas.Role_ROLE_MEMBER {
		return "role: only the owner gives the admin or owner role"
	}
	for _, u := range users {
		switch ur := c.roleOf(u); {
		case ur == "o" && rl != schemas.Role_ROLE_OWNER:
			return "recipients: " + u + " owns the group: ownership moves by giving the owner role to another member"
		case ur == "a" && sr != "o":
			return "recipients: " + u + " is an admin: only the owner changes their role"
		}
	}
	return ""
}

// applyRoles updates the roles for an accepted record of seq s, before
// its membership change is applied (a leave hands ownership over after).
func (c *ConvTruth) applyRoles(m *schemas.Message, s uint64) {
	users := m.GetRecipients()
	switch m.GetKind() {
	case schemas.Kind_KIND_MESSAGE:
		if s == 1 {
			c.setOwner(m.GetSender())
		}
	case schemas.Kind_KIND_MEMBER_JOIN:
		for _, u := range users {
			switch m.GetRole() {
			case schemas.Role_ROLE_ADMIN:
				c.Roles[u] = "a"
			case schemas.Role_ROLE_MEMBER:
				delete(c.Roles, u)
			}
		}
		if m.GetRole() == schemas.Role_ROLE_OWNER {
			c.setOwner(users[0])
		}
		if s == 1 {
			if m.GetAuthority() == schemas.Authority_AUTHORITY_SYSTEM {
				c.setOwner(users[0])
			} else {
				c.setOwner(m.GetSender())
			}
		}
	case schemas.Kind_KIND_MEMBER_LEAVE:
		owner := false
		for _, u := range users {
			if _, ok := c.Members[u]; ok {
				owner = owner || c.Roles[u] == "o"
				delete(c.Roles, u)
			}
		}
		if owner {
			c.handOver(users)
		}
	}
}

func (c *ConvTruth) setOwner(u string) {
	for v, r := range c.Roles {
		if r == "o" && v != u {
			c.Roles[v] = "a"
		}
	}
	c.Roles[u] = "o"
}

// handOver picks the new owner once the leavers are gone: the admin of
// the lowest id, else the member who joined first (lowest id on a tie).
func (c *ConvTruth) handOver(leaving []string) {
	var cands []string
	for u, r := range c.Roles {
		if r == "a" {
			cands = append(cands, u)
		}
	}
	if len(cands) == 0 {
		for u := range c.Members {
			if !slices.Contains(leaving, u) {
				cands = append(cands, u)
			}
		}
		sort.Slice(cands, func(i, j int) bool {
			a, b := c.Members[cands[i]], c.Members[cands[j]]
			return a < b || (a == b && cands[i] < cands[j])
		})
	} else {
		slices.Sort(cands)
	}
	if len(cands) > 0 {
		c.Roles[cands[0]] = "o"
	}
}
