package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
)

// smallGroup runs the pipeline over one group g of ann and bob with three
// messages and waits until ann's inbox has them.
func smallGroup(t testing.TB, e *env) {
	t.Helper()
	e.runPipeline()
	e.produce(founding("g", "bob", "ann"), textMsg("g", "m1", "bob"), textMsg("g", "m2", "bob"), textMsg("g", "m3", "bob"))
	eventually(t, "g delivered", func() (bool, string) {
		var l conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations", e.token("ann", ""), nil, &l)
		return len(l.Conversations) == 1 && l.Conversations[0].LastSeq == 4, string(must(json.Marshal(l)))
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestRejectedRequestsNameTheFieldAndChangeNothing(t *testing.T) {
	e := newEnv(t, envOptions{cfg: Config{MaxCursors: 3, MaxBodyBytes: 96 << 10}})
	smallGroup(t, e)
	ann := e.token("ann", "")
	annPhone := e.token("ann", "phone")
	big := `{"device_id":"p","cursors":{},"x":"` + strings.Repeat("a", 100<<10) + `"}`
	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		field                     string
	}{
		{"malformed JSON", "POST", "/v1/sync", annPhone, `{"cursors":`, 400, "body"},
		{"not an object", "POST", "/v1/sync", annPhone, `[1,2]`, 400, "body"},
		{"trailing data", "POST", "/v1/sync", annPhone, `{} {}`, 400, "body"},
		{"empty body", "POST", "/v1/sync", annPhone, ``, 400, "body"},
		{"oversized body", "POST", "/v1/sync", annPhone, big, 400, "body"},
		{"unknown field", "POST", "/v1/sync", annPhone, `{"curser":{}}`, 400, "curser"},
		{"unknown cursor field", "POST", "/v1/sync", annPhone, `{"cursors":{"g":{"seq":1,"epoch":1,"x":1}}}`, 400, "cursors.g.x"},
		{"negative seq", "POST", "/v1/sync", annPhone, `{"cursors":{"g":{"seq":-1,"epoch":1}}}`, 400, "cursors.g.seq"},
		{"non-numeric seq", "POST", "/v1/sync", annPhone, `{"cursors":{"g":{"seq":"7","epoch":1}}}`, 400, "cursors.g.seq"},
		{"seq without epoch", "POST", "/v1/sync", annPhone, `{"cursors":{"g":{"seq":2}}}`, 400, "cursors.g.epoch"},
		{"bad conversation id", "POST", "/v1/sync", annPhone, `{"cursors":{"a:b":{"seq":0}}}`, 400, "cursors.conv_id"},
		{"too many cursors", "POST", "/v1/sync", annPhone, `{"cursors":{"a":{},"b":{},"c":{},"d":{}}}`, 400, "cursors"},
		{"limit zero", "POST", "/v1/sync", annPhone, `{"limit":0}`, 400, "limit"},
		{"limit above 200", "POST", "/v1/sync", annPhone, `{"limit":201}`, 400, "limit"},
		{"limit not a number", "POST", "/v1/sync", annPhone, `{"limit":"ten"}`, 400, "limit"},
		{"budget too small", "POST", "/v1/sync", annPhone, `{"max_bytes":100}`, 400, "max_bytes"},
		{"no device", "POST", "/v1/sync", ann, `{}`, 400, "device_id"},
		{"another device than the token's", "POST", "/v1/sync", annPhone, `{"device_id":"laptop"}`, 403, ""},
		{"empty ack", "POST", "/v1/ack", annPhone, `{"acks":[]}`, 400, "acks"},
		{"ack of seq 0", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":0}]}`, 400, "acks[0].seq"},
		{"ack beyond the max seq", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":2},{"conv_id":"g","seq":99}]}`, 400, "acks[1].seq"},
		{"ack of an older epoch", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":2,"epoch":12345}]}`, 409, "acks[0].epoch"},
		{"ack of an epoch never issued", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":2,"epoch":99999999999999}]}`, 400, "acks[0].epoch"},
		{"ack of a stranger's conversation", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":2},{"conv_id":"h","seq":1}]}`, 403, ""},
		{"ack with unknown field", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":2,"max":3}]}`, 400, "acks[0].max"},
		{"too many acks", "POST", "/v1/ack", annPhone, `{"acks":[{"conv_id":"g","seq":1},{"conv_id":"g","seq":1},{"conv_id":"g","seq":1},{"conv_id":"g","seq":1}]}`, 400, "acks"},
		{"rejections since a negative time", "GET", "/v1/rejections?since_ms=-1", ann, nil, 400, "since_ms"},
		{"rejections since no number", "GET", "/v1/rejections?since_ms=yesterday", ann, nil, 400, "since_ms"},
		{"rejections with an unknown parameter", "GET", "/v1/rejections?since=1", ann, nil, 400, "since"},
		{"negative read", "POST", "/v1/read", ann, `{"receipts":[{"conv_id":"g","seq":-5}]}`, 400, "receipts[0].seq"},
		{"read beyond the max seq", "POST", "/v1/read", ann, `{"receipts":[{"conv_id":"g","seq":5}]}`, 400, "receipts[0].seq"},
		{"page after negative", "GET", "/v1/conversations/g/messages?after=-1", ann, nil, 400, "after"},
		{"page limit zero", "GET", "/v1/conversations/g/messages?limit=0", ann, nil, 400, "limit"},
		{"page limit not a number", "GET", "/v1/conversations/g/messages?limit=abc", ann, nil, 400, "limit"},
		{"page unknown parameter", "GET", "/v1/conversations/g/messages?afterr=1", ann, nil, 400, "afterr"},
		{"page with from and after", "GET", "/v1/conversations/g/messages?from=2&after=1", ann, nil, 400, "from"},
		{"page from zero", "GET", "/v1/conversations/g/messages?from=0&to=1", ann, nil, 400, "from"},
		{"page to below from", "GET", "/v1/conversations/g/messages?from=2&to=1", ann, nil, 400, "to"},
		{"page of an older epoch", "GET", "/v1/conversations/g/messages?epoch=12345", ann, nil, 409, "epoch"},
		{"page of an epoch never issued", "GET", "/v1/conversations/g/messages?epoch=99999999999999", ann, nil, 400, "epoch"},
		{"list limit too large", "GET", "/v1/conversations?limit=1000", ann, nil, 400, "limit"},
		{"list cursor forged", "GET", "/v1/conversations?cursor=zz", ann, nil, 400, "cursor"},
		{"send with a sender", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"group","sender":"bob"}`, 400, "sender"},
		{"send with a tag (only trusted backends set a conversation's retention tag)", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"group","tag":"finance"}`, 400, "tag"},
		{"send unknown type", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"channel"}`, 400, "conv_type"},
		{"send without id", "POST", "/v1/messages", ann, `{"conv_id":"g","conv_type":"group"}`, 400, "client_msg_id"},
		{"send direct without peer", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"d","conv_type":"direct"}`, 400, "recipients"},
		{"send body not base64", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"group","body":"***"}`, 400, "body"},
		{"send negative send time", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"group","send_time_ms":-5}`, 400, "send_time_ms"},
		{"send body too large", "POST", "/v1/messages", ann, `{"client_msg_id":"c","conv_id":"g","conv_type":"group","body":"` + strings.Repeat("QUFB", 22<<10) + `"}`, 400, "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, data := e.call(tc.method, tc.path, tc.token, tc.body)
			var er tError
			if err := json.Unmarshal(data, &er); err != nil {
				t.Fatalf("answer is not JSON: %s", data)
			}
			if code != tc.status || er.Error.Field != tc.field || er.Error.Message == "" {
				t.Fatalf("status %d field %q (%s), want %d field %q", code, er.Error.Field, er.Error.Message, tc.status, tc.field)
			}
		})
	}
	// Nothing reached the store or the broker.
	ctx := context.Background()
	k := e.store.Keys()
	if n := e.store.Client().Exists(ctx, k.Devices("ann"), k.Cursor("ann", "phone")).Val(); n != 0 {
		t.Fatalf("a rejected ack left %d device keys", n)
	}
	if n := e.endOffset(t, schemas.TopicReceipts); n != 0 {
		t.Fatalf("rejected reads produced %d receipts", n)
	}
	if n := e.endOffset(t, schemas.TopicMessages); n != 4 {
		t.Fatalf("im.messages holds %d records, want the 4 of the setup", n)
	}
}

// epochOf reads the conversation's epoch through the API.
func (e *env) epochOf(t *testing.T, user, conv string) uint64 {
	t.Helper()
	var p tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/"+conv+"/messages?limit=1", e.token(user, ""), nil, &p)
	return p.Epoch
}

// endOffset sums a topic's end offsets: how many records it ever got.
func (e *env) endOffset(t testing.TB, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}
