package retention

import (
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

const day = 24 * time.Hour

const testPolicies = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: finance
    match: {tag: finance}
    inbox: 60d
    history: 180d
  - name: finance-groups
    match: {tag: finance, conv_type: group}
    history: 200d
  - name: scratch
    match: {conv_prefix: tmp-}
    history: none
  - name: scratch-long
    match: {conv_prefix: tmp-long-}
    inbox: 45d
  - name: groups
    match: {conv_type: group}
    history: 30d
  - name: notices
    match: {content_type: system/notice}
    inbox: 7d
    history: 7d
  - name: joins
    match: {kind: member_join}
    history: 90d
  - name: finance-notices
    match: {tag: finance, content_type: system/notice}
    history: 60d
  - name: legal
    match: {conv: tmp-legal}
    audit_hold: 2y
`

func mustParse(t *testing.T, text string) *Set {
	t.Helper()
	set, err := Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestResolvePicksTheMostSpecificPolicyForEachSetting(t *testing.T) {
	set := mustParse(t, testPolicies)
	g, d := schemas.ConvType_CONV_TYPE_GROUP, schemas.ConvType_CONV_TYPE_DIRECT
	msg := schemas.Kind_KIND_MESSAGE
	cases := []struct {
		name                   string
		sub                    Subject
		inbox                  time.Duration
		inboxFrom, historyFrom string
		kept                   time.Duration
	}{
		{"nothing matches", Subject{Conv: "d1", ConvType: d, Kind: msg}, 30 * day, "defaults", "defaults", 365 * day},
		{"a tag beats a conversation type", Subject{Conv: "d1", Tag: "finance", ConvType: d, Kind: msg}, 60 * day, "finance", "finance", 180 * day},
		{"tag and type beat tag alone; inbox falls to the next that sets it", Subject{Conv: "g1", Tag: "finance", ConvType: g, Kind: msg}, 60 * day, "finance", "finance-groups", 200 * day},
		{"a prefix beats a type; none keeps history as long as the inbox", Subject{Conv: "tmp-1", ConvType: g, Kind: msg}, 30 * day, "defaults", "scratch", 30 * day},
		{"the longer prefix wins, none follows its inbox", Subject{Conv: "tmp-long-1", ConvType: d, Kind: msg}, 45 * day, "scratch-long", "scratch", 45 * day},
		{"a content type beats everything about the conversation", Subject{Conv: "tmp-1", ConvType: g, Kind: msg, ContentType: "system/notice"}, 7 * day, "notices", "notices", 7 * day},
		{"among content type policies the tag decides", Subject{Conv: "d1", Tag: "finance", ConvType: d, Kind: msg, ContentType: "system/notice"}, 7 * day, "notices", "finance-notices", 60 * day},
		{"a kind beats the conversation's type", Subject{Conv: "g1", ConvType: g, Kind: schemas.Kind_KIND_MEMBER_JOIN}, 30 * day, "defaults", "joins", 90 * day},
		{"an audit hold outlasts history none", Subject{Conv: "tmp-legal", ConvType: d, Kind: msg}, 30 * day, "defaults", "scratch", 730 * day},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := set.Resolve(c.sub)
			if got.Inbox != c.inbox || got.InboxFrom != c.inboxFrom || got.HistoryFrom != c.historyFrom || got.Kept != c.kept {
				t.Fatalf("inbox %s from %s, history from %s, kept %s; want %s from %s, from %s, kept %s",
					got.Inbox, got.InboxFrom, got.HistoryFrom, got.Kept, c.inbox, c.inboxFrom, c.historyFrom, c.kept)
			}
		})
	}
}

// The compiled Redis retention of a conversation gives every message the
// inbox window Resolve gives it.
func TestInboxCompilesToTheWindowsResolveChooses(t *testing.T) {
	set := mustParse(t, testPolicies+`  - name: finance-joins
    match: {tag: finance, kind: member_join}
    inbox: 90d
  - name: group-notices
    match: {conv_type: group, content_type: system/notice}
    inbox: 14d
`)
	kinds := []schemas.Kind{schemas.Kind_KIND_MESSAGE, schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE}
	for _, conv := range []redisstore.ConvRetention{
		{Conv: "d1", Type: schemas.ConvType_CONV_TYPE_DIRECT},
		{Conv: "g1", Type: schemas.ConvType_CONV_TYPE_GROUP, Tag: "finance"},
		{Conv: "tmp-long-1", Type: schemas.ConvType_CONV_TYPE_GROUP},
		{Conv: "tmp-2", Type: schemas.ConvType_CONV_TYPE_DIRECT, Tag: "finance"},
	} {
		r := set.Inbox(conv)
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, k := range kinds {
			for _, ct := range []string{"", "text/plain", "system/notice"} {
				want := set.Resolve(Subject{Conv: conv.Conv, Tag: conv.Tag, ConvType: conv.Type, Kind: k, ContentType: ct}).Inbox
				if got := r.MessageWindow(conv.Type, k, ct); got != want {
					t.Errorf("%+v kind %s content type %q: compiled %s, resolved %s", conv, k, ct, got, want)
				}
			}
		}
	}
}

func TestBoundsCoverEveryDecision(t *testing.T) {
	set := mustParse(t, testPolicies)
	if got := set.LongestKept(); got != 730*day {
		t.Fatalf("longest %s, want the 2y hold", got)
	}
	if got := set.ShortestKept(); got != 7*day {
		t.Fatalf("shortest %s, want 7d", got)
	}
	mw := set.LongestInboxWindows()
	if mw.TypeWindow(schemas.ConvType_CONV_TYPE_GROUP) != 60*day || mw.TypeWindow(schemas.ConvType_CONV_TYPE_DIRECT) != 60*day {
		t.Fatalf("mention windows %+v, want the longest inbox (60d) for both types", mw.ConvTypes)
	}
}

func TestFromRetentionKeepsTheBuiltInSettings(t *testing.T) {
	r := redisstore.Retention{Window: 20 * day,
		ConvTypes: map[schemas.ConvType]time.Duration{schemas.ConvType_CONV_TYPE_GROUP: 10 * day},
		Kinds:     map[schemas.Kind]time.Duration{schemas.Kind_KIND_MEMBER_JOIN: 40 * day}}
	set := FromRetention(r, 400*day)
	for _, k := range []schemas.Kind{schemas.Kind_KIND_MESSAGE, schemas.Kind_KIND_MEMBER_JOIN} {
		for _, typ := range []schemas.ConvType{schemas.ConvType_CONV_TYPE_DIRECT, schemas.ConvType_CONV_TYPE_GROUP} {
			got := set.Resolve(Subject{Conv: "c", ConvType: typ, Kind: k})
			if got.Inbox != r.EntryWindow(typ, k) || got.Kept != 400*day {
				t.Errorf("%s %s: inbox %s kept %s; want %s and 400d", typ, k, got.Inbox, got.Kept, r.EntryWindow(typ, k))
			}
		}
	}
}
