package redisstore

import "testing"

func TestConvOfChannelReadsBackOnlyAConversationsChannel(t *testing.T) {
	k := Keys{Prefix: "t:"}
	cases := []struct {
		name    string
		channel string
		conv    string
		ok      bool
	}{
		{"a conversation's channel", k.ConvChannel("crew"), "crew", true},
		{"a conversation named with braces", k.ConvChannel("a}b"), "a}b", true},
		{"a node's channel", k.NodeChannel("n1"), "", false},
		{"another prefix", Keys{Prefix: "u:"}.ConvChannel("crew"), "", false},
		{"cut short", "t:live:{c:crew", "", false},
		{"no prefix", "live:{c:crew}", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv, ok := k.ConvOfChannel(tc.channel)
			if conv != tc.conv || ok != tc.ok {
				t.Fatalf("ConvOfChannel(%q) = %q, %v; want %q, %v", tc.channel, conv, ok, tc.conv, tc.ok)
			}
		})
	}
}
