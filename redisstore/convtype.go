package redisstore

import "github.com/offlinebox/offlinebox/schemas"

// A conversation's type is a schemas.ConvType on the Go side. Stored, it is
// one letter: the meta's `type` field holds d (direct) or g (group), and a
// user's inbox field C:t holds the same letters, or L while the user is a
// member of a large group (see schemas/redis-keys.md). The scripts spell
// the letters the same way.
const (
	typeCodeDirect = 'd'
	typeCodeGroup  = 'g'
	typeCodeLarge  = 'L'
)

// typeCode is the meta's spelling of t; a conversation of no known type is
// stored as a group, as the sequencing script creates it.
func TypeCode(t schemas.ConvType) string {
	if t == schemas.ConvType_CONV_TYPE_DIRECT {
		return string(rune(typeCodeDirect))
	}
	return string(rune(typeCodeGroup))
}

// ConvTypeOfCode reads the meta's `type` field (UNSPECIFIED when absent or
// unknown).
func ConvTypeOfCode(v string) schemas.ConvType {
	switch v {
	case string(rune(typeCodeDirect)):
		return schemas.ConvType_CONV_TYPE_DIRECT
	case string(rune(typeCodeGroup)):
		return schemas.ConvType_CONV_TYPE_GROUP
	}
	return schemas.ConvType_CONV_TYPE_UNSPECIFIED
}

// InboxForm is how a conversation is kept in a user's inbox (the `C:t`
// field of schemas/redis-keys.md): its type, and for a group whether the
// user is in it as a member of a large group.
type InboxForm byte

// Inbox forms.
const (
	InboxDirect InboxForm = typeCodeDirect
	InboxGroup  InboxForm = typeCodeGroup
	// InboxLarge: unread and order are derived at read time.
	InboxLarge InboxForm = typeCodeLarge
)

// InboxFormOf reads the inbox's C:t field. An absent or unknown field is a
// group's: only a direct conversation's inbox says so.
func InboxFormOf(v string) InboxForm {
	if len(v) == 1 && (v[0] == typeCodeDirect || v[0] == typeCodeLarge) {
		return InboxForm(v[0])
	}
	return InboxGroup
}

// Type is the conversation type the form keeps.
func (f InboxForm) Type() schemas.ConvType {
	if f == InboxDirect {
		return schemas.ConvType_CONV_TYPE_DIRECT
	}
	return schemas.ConvType_CONV_TYPE_GROUP
}

// Large: the user is in the conversation as a member of a large group.
func (f InboxForm) Large() bool { return f == InboxLarge }
