package schemas

// The enums' names as offlinebox spells them outside protobuf: in the API's
// JSON and in ClickHouse's Enum8 columns. A Name function answers "" for a
// value this version does not know; a Parse function answers false for a
// name it does not know.

// ConvTypeName names a conversation type.
func ConvTypeName(t ConvType) string {
	switch t {
	case ConvType_CONV_TYPE_UNSPECIFIED:
		return "unspecified"
	case ConvType_CONV_TYPE_DIRECT:
		return "direct"
	case ConvType_CONV_TYPE_GROUP:
		return "group"
	}
	return ""
}

// ParseConvType is the inverse of ConvTypeName.
func ParseConvType(name string) (ConvType, bool) {
	for _, t := range []ConvType{ConvType_CONV_TYPE_UNSPECIFIED, ConvType_CONV_TYPE_DIRECT, ConvType_CONV_TYPE_GROUP} {
		if ConvTypeName(t) == name {
			return t, true
		}
	}
	return ConvType_CONV_TYPE_UNSPECIFIED, false
}

// KindName names a record kind.
func KindName(k Kind) string {
	switch k {
	case Kind_KIND_UNSPECIFIED:
		return "unspecified"
	case Kind_KIND_MESSAGE:
		return "message"
	case Kind_KIND_MEMBER_JOIN:
		return "member_join"
	case Kind_KIND_MEMBER_LEAVE:
		return "member_leave"
	}
	return ""
}

// ParseKind is the inverse of KindName.
func ParseKind(name string) (Kind, bool) {
	for _, k := range []Kind{Kind_KIND_UNSPECIFIED, Kind_KIND_MESSAGE, Kind_KIND_MEMBER_JOIN, Kind_KIND_MEMBER_LEAVE} {
		if KindName(k) == name {
			return k, true
		}
	}
	return Kind_KIND_UNSPECIFIED, false
}

// QoSName names a QoS.
func QoSName(q QoS) string {
	switch q {
	case QoS_QOS_UNSPECIFIED:
		return "unspecified"
	case QoS_QOS_AT_MOST_ONCE:
		return "at_most_once"
	case QoS_QOS_AT_LEAST_ONCE:
		return "at_least_once"
	}
	return ""
}

// ParseQoS is the inverse of QoSName.
func ParseQoS(name string) (QoS, bool) {
	for _, q := range []QoS{QoS_QOS_UNSPECIFIED, QoS_QOS_AT_MOST_ONCE, QoS_QOS_AT_LEAST_ONCE} {
		if QoSName(q) == name {
			return q, true
		}
	}
	return QoS_QOS_UNSPECIFIED, false
}

// RoleName names a member role.
func RoleName(r Role) string {
	switch r {
	case Role_ROLE_UNSPECIFIED:
		return "unspecified"
	case Role_ROLE_MEMBER:
		return "member"
	case Role_ROLE_ADMIN:
		return "admin"
	case Role_ROLE_OWNER:
		return "owner"
	}
	return ""
}

// ParseRole is the inverse of RoleName.
func ParseRole(name string) (Role, bool) {
	for _, r := range []Role{Role_ROLE_UNSPECIFIED, Role_ROLE_MEMBER, Role_ROLE_ADMIN, Role_ROLE_OWNER} {
		if RoleName(r) == name {
			return r, true
		}
	}
	return Role_ROLE_UNSPECIFIED, false
}

// AuthorityName names who vouches for a record's membership effect.
func AuthorityName(a Authority) string {
	switch a {
	case Authority_AUTHORITY_SENDER:
		return "sender"
	case Authority_AUTHORITY_SYSTEM:
		return "system"
	}
	return ""
}

// ParseAuthority is the inverse of AuthorityName.
func ParseAuthority(name string) (Authority, bool) {
	for _, a := range []Authority{Authority_AUTHORITY_SENDER, Authority_AUTHORITY_SYSTEM} {
		if AuthorityName(a) == name {
			return a, true
		}
	}
	return Authority_AUTHORITY_SENDER, false
}
