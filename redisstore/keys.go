package redisstore

import (
	"strconv"
	"strings"
)

// DefaultPrefix starts every key unless configured otherwise.
const DefaultPrefix = "ob:"

// Keys builds every key name of the data model. It is the only place key
// names are spelled out on the Go side.
type Keys struct {
	Prefix string
}

func (k Keys) conv(conv, suffix string) string { return k.Prefix + "{c:" + conv + "}:" + suffix }
func (k Keys) user(user, suffix string) string { return k.Prefix + "{u:" + user + "}:" + suffix }

// ConvMeta is the conversation's counter, epoch, retention floor and summary.
func (k Keys) ConvMeta(conv string) string { return k.conv(conv, "meta") }

// Timeline is the list of the conversation's sequenced entries.
func (k Keys) Timeline(conv string) string { return k.conv(conv, "tl") }

// Members maps member → seq at which they joined.
func (k Keys) Members(conv string) string { return k.conv(conv, "mem") }

// Roles maps a group's owner and admins to their role (o, a); a member
// without an entry is a plain member.
func (k Keys) Roles(conv string) string { return k.conv(conv, "role") }

// PastMembers maps a former member to the spans they were a member for.
func (k Keys) PastMembers(conv string) string { return k.conv(conv, "past") }

// Dedupe maps client_msg_id → seq for records sequenced on the given day.
func (k Keys) Dedupe(conv string, day int64) string {
	return k.conv(conv, "dd:"+strconv.FormatInt(day, 10))
}

// MentionAll holds the seqs of @all messages of a large group.
func (k Keys) MentionAll(conv string) string { return k.conv(conv, "ma") }

// Notices holds the seqs of a group's join and leave records (member and
// score: the seq), which a large group's derived unread leaves out.
func (k Keys) Notices(conv string) string { return k.conv(conv, "ns") }

// Held marks a conversation a restore could not put back exactly (its
// value says why): the sequencing script refuses it until a rebuild, so
// no seq the changelog gave another message is handed out again.
func (k Keys) Held(conv string) string { return k.conv(conv, "held") }

// Inbox is the user's per-conversation counters and guards.
func (k Keys) Inbox(user string) string { return k.user(user, "ib") }

// ConvList orders the user's conversations by last activity.
func (k Keys) ConvList(user string) string { return k.user(user, "cl") }

// Mentions is the user's @mention lane.
func (k Keys) Mentions(user string) string { return k.user(user, "mn") }

// MentionIndex holds the members of Mentions again, all scored 0, so that
// one conversation's references are a lexicographic range ("C:" to "C;").
func (k Keys) MentionIndex(user string) string { return k.user(user, "mx") }

// Previews holds the last-message preview per conversation.
func (k Keys) Previews(user string) string { return k.user(user, "pv") }

// Devices orders the user's devices by last use.
func (k Keys) Devices(user string) string { return k.user(user, "dv") }

// Cursor is one device's acked seq per conversation.
func (k Keys) Cursor(user, device string) string { return k.user(user, "cur:"+device) }

// Evicted is the set of the user's devices evicted from Devices.
func (k Keys) Evicted(user string) string { return k.user(user, "ev") }

// Profile holds account flags such as receive-only.
func (k Keys) Profile(user string) string { return k.user(user, "prof") }

// InboxField names one counter of one conversation in the Inbox hash.
func InboxField(conv string, counter byte) string { return conv + ":" + string(counter) }

// Inbox fields of the list indexes (see schemas/redis-keys.md): they start
// with ':', which no conversation's field does.
const (
	// InboxLargeGroups lists the conversations whose form is InboxLarge,
	// each followed by a newline, after a leading one.
	InboxLargeGroups = ":lg"
	// InboxIndexed is "1" once InboxLargeGroups and the MentionIndex are
	// complete for the user.
	InboxIndexed = ":ix"
)

// Fields of a conversation's meta hash (see schemas/redis-keys.md).
const (
	MetaSeq            = "seq"
	MetaEpoch          = "epoch"
	MetaFirst          = "first"
	MetaType           = "type" // see convtype.go
	MetaLarge          = "large"
	MetaLargeFrom      = "lgs"
	MetaLargeConverted = "lgc"
	MetaMemberCount    = "nmem"
	MetaMemberVersion  = "mver"
	MetaLastSender     = "lsender"
	MetaLastTime       = "lts"
	MetaLastPreview    = "lprev"
	MetaTag            = "tag"
)

// Fields of a user's profile hash.
const (
	// ProfileReceiveOnly is "1" for a receive-only account.
	ProfileReceiveOnly = "ro"
	// ProfileLocation is ProfileOnHot once the user's keys moved to the hot
	// store (the scripts answer OBMOVED then).
	ProfileLocation = "loc"
	ProfileOnHot    = "hot"
)

// Inbox counters (see schemas/redis-keys.md).
const (
	FieldLast   = 'l'
	FieldRead   = 'r'
	FieldJoined = 'j'
	FieldType   = 't'
	// FieldEpoch is the epoch the conversation's l, r and j count in.
	FieldEpoch = 'e'
)

// MentionMember names one entry of the mention lane.
func MentionMember(conv string, seq uint64) string {
	return conv + ":" + strconv.FormatUint(seq, 10)
}

// DayOf is the dedupe day of a write time in milliseconds.
func DayOf(writeMS int64) int64 { return writeMS / 86_400_000 }

// Presence maps the user's devices to the API node holding their live
// connection (see presence.go). It lives on the main store for every user.
func (k Keys) Presence(user string) string { return k.user(user, "on") }

// Rejections are the refusals of the user's records, newest kept (see
// rejections.go). Like presence, they live on the main store for every
// user.
func (k Keys) Rejections(user string) string { return k.user(user, "rj") }

// Revoked are the user's revocations (see revocations.go): device, or
// RevokedAllDevices, → the time before which their tokens are refused.
// Like presence, they live on the main store for every user.
func (k Keys) Revoked(user string) string { return k.user(user, "rv") }

// RevocationLog is the recent revocations of every user, which each API
// node reads every second to close the revoked connections it holds.
func (k Keys) RevocationLog() string { return k.Prefix + "{revoked}:log" }

// Delivered and ReadBy are a conversation's receipt cursors: member → the
// highest seq delivered to (stored by a device of) or read by that member.
func (k Keys) Delivered(conv string) string { return k.conv(conv, "rcd") }
func (k Keys) ReadBy(conv string) string    { return k.conv(conv, "rcr") }

// Pushed is a conversation's pushed cursors: member → the highest seq an
// API node wrote to a live connection of one of the member's devices.
func (k Keys) Pushed(conv string) string { return k.conv(conv, "rcp") }

// ReceiptEpoch names the epoch the receipt cursors belong to.
func (k Keys) ReceiptEpoch(conv string) string { return k.conv(conv, "rce") }

// NodeChannel is the sharded pub/sub channel of one API node: pushes for
// the devices it holds.
func (k Keys) NodeChannel(node string) string { return k.Prefix + "live:{n:" + node + "}" }

// ConvChannel is the sharded pub/sub channel of a large group: one publish
// per message, whatever the member count, to the nodes that hold members.
func (k Keys) ConvChannel(conv string) string { return k.Prefix + "live:{c:" + conv + "}" }

// ConvOfChannel is the conversation whose channel (ConvChannel) this is;
// ok is false for any other name (a node's channel, another prefix's).
func (k Keys) ConvOfChannel(channel string) (conv string, ok bool) {
	rest, ok := strings.CutPrefix(channel, k.Prefix+"live:{c:")
	if !ok {
		return "", false
	}
	conv, ok = strings.CutSuffix(rest, "}")
	if !ok || k.ConvChannel(conv) != channel {
		return "", false
	}
	return conv, true
}

// Applied is one copy of the changelog fence: im.sequenced partition →
// the offset below which every record's effects are held by the server
// that holds this key (fanout writes it, a restore starts from it). A
// cluster has a copy on every master, n chosen so that its slot is one
// the master owns; a single server has copy 0.
func (k Keys) Applied(n int) string { return k.Prefix + "{fence:" + strconv.Itoa(n) + "}:applied" }

// RebuildTimeline is where a rebuild stages the timeline before it
// replaces the live one.
func (k Keys) RebuildTimeline(conv string) string { return k.conv(conv, "tl:rebuild") }

// RebuildMembers is where a rebuild stages the member set.
func (k Keys) RebuildMembers(conv string) string { return k.conv(conv, "mem:rebuild") }

// RebuildRoles is where a rebuild stages the group's roles.
func (k Keys) RebuildRoles(conv string) string { return k.conv(conv, "role:rebuild") }

// RebuildPastMembers is where a rebuild stages the former members' spans.
func (k Keys) RebuildPastMembers(conv string) string { return k.conv(conv, "past:rebuild") }

// DataKey is the conversation's wrapped data key (package seal).
func (k Keys) DataKey(conv string) string { return k.conv(conv, "dk") }

// MasterCanaries maps each master key id that ever wrapped a data key to
// a canary it wrapped, so a start with a wrong or missing master key
// fails at once instead of at the first read.
func (k Keys) MasterCanaries() string { return k.Prefix + "{seal}:masters" }

// HotUsers is the set of users whose `{u:…}` keys live on the hot store.
// It is kept on the main store, so every process finds it.
func (k Keys) HotUsers() string { return k.Prefix + "{hot}:users" }

// InboxMoveLock is held while a user's keys are moved to the hot store.
func (k Keys) InboxMoveLock(user string) string { return k.user(user, "mvlock") }

// DedupeBucket is bucket b of a day's dedupe digests; bucket 0 is Dedupe.
func (k Keys) DedupeBucket(conv string, day int64, b int) string {
	if b == 0 {
		return k.Dedupe(conv, day)
	}
	return k.Dedupe(conv, day) + ":" + strconv.Itoa(b)
}

// DedupeExact maps in full the client_msg_ids of a day whose digest the
// day already held for another id.
func (k Keys) DedupeExact(conv string, day int64) string { return k.Dedupe(conv, day) + ":x" }

// ExpirySweep is the state of the expiry sweeps (see expiry_sweep_acquire.lua).
func (k Keys) ExpirySweep() string { return k.Prefix + "{expiry}:sweep" }

// ExpiryLease is the lease on one sweep job.
func (k Keys) ExpiryLease(job string) string { return k.Prefix + "{expiry}:lease:" + job }

// EvictionsSeen maps each server's run_id to its evicted_keys when a
// writer verified it (EvictionsSeen).
func (k Keys) EvictionsSeen() string { return k.Prefix + "{fence}:evictions" }

// EvictionHold is why sequencing is held on the store: a server evicted
// keys since it was verified (HoldEvicted), until `offlinebox
// repair-evicted` releases it.
func (k Keys) EvictionHold() string { return k.Prefix + "{fence}:evicted" }

// RetentionConfirmed is the retention policy last confirmed
// (ConfirmedRetention): the floor of every expiry sweep.
func (k Keys) RetentionConfirmed() string { return k.Prefix + "{expiry}:retention" }

// KeyRef is a key of the data model taken apart. Exactly one of Conv and
// User is set.
type KeyRef struct {
	Conv string
	User string
	// Part is what follows the hash tag: "meta", "tl", "dd:DAY", "mn",
	// "cur:DEVICE", ...
	Part string
}

// ParseKey takes apart a key of this store's prefix; ok is false for any
// other key.
func (k Keys) ParseKey(key string) (ref KeyRef, ok bool) {
	rest, ok := strings.CutPrefix(key, k.Prefix)
	if !ok || len(rest) < 4 || rest[0] != '{' || rest[2] != ':' {
		return KeyRef{}, false
	}
	scope := rest[1]
	id, part, ok := strings.Cut(rest[3:], "}:")
	if !ok || id == "" || part == "" {
		return KeyRef{}, false
	}
	switch scope {
	case 'c':
		return KeyRef{Conv: id, Part: part}, true
	case 'u':
		return KeyRef{User: id, Part: part}, true
	}
	return KeyRef{}, false
}

// DedupeDay returns the day of a dedupe key's Part ("dd:DAY", or
// "dd:DAY:BUCKET" and "dd:DAY:x" of the same day).
func (r KeyRef) DedupeDay() (int64, bool) {
	d, ok := strings.CutPrefix(r.Part, "dd:")
	if !ok || r.Conv == "" {
		return 0, false
	}
	d, _, _ = strings.Cut(d, ":")
	day, err := strconv.ParseInt(d, 10, 64)
	return day, err == nil
}

// The SCAN patterns of the scans over the data model: the prefix escaped,
// then the keys' shape.
func (k Keys) scanMatch() string    { return k.match("{[cu]:*") }
func (k Keys) censusMatch() string  { return k.match("{u:*}:ib") }
func (k Keys) dataKeyMatch() string { return k.match("{c:*}:dk") }

func (k Keys) match(shape string) string {
	var b strings.Builder
	for _, r := range k.Prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString(shape)
	return b.String()
}
