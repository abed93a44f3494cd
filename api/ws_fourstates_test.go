package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
)

// TestTheSenderSeesStoredThenPushedThenDeliveredThenRead: with the
// recipient offline a message is stored; sent while a device of theirs
// is online and has not acked, it is pushed, on the sender's live channel
// and in the receipts answer; after the ack it is delivered, after the
// read it is read.
func TestTheSenderSeesStoredThenPushedThenDeliveredThenRead(t *testing.T) {
	le := newLiveEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	le.produce(founding("g4", "ann", "ben", "cat"), textMsg("g4", "g4-1", "ann"))
	ann := le.device(0, "ann", "phone")
	eventually(t, "the first message is sequenced", func() (bool, string) {
		got, _, err := ann.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1 && got.Conversations[0].MaxSeq == 2, fmt.Sprint(got, err)
	})
	ann.connect()
	receipts := func(seq uint64) receiptsJSON {
		t.Helper()
		var rc receiptsJSON
		le.callOK(200, "GET", fmt.Sprintf("/v1/conversations/g4/receipts?seq=%d", seq), le.token("ann", "phone"), nil, &rc)
		return rc
	}
	if rc := receipts(2); rc.State != StateStored || *rc.Pushed != 0 || *rc.Delivered != 0 || *rc.Members != 2 {
		t.Fatalf("with every recipient offline the receipts are %+v, want stored, none pushed, of 2", rc)
	}

	ben := le.device(1, "ben", "tablet") // on the other node
	ben.connect()
	if err := ann.http.Send(ctx, obclient.Outgoing{ClientMsgID: "g4-2", ConvID: "g4", ConvType: "group",
		ContentType: "text/plain", Body: []byte("lunch at noon")}); err != nil {
		t.Fatal(err)
	}
	pushedTo := ben.until("message", func(f obclient.Frame) bool { return f.Message != nil && f.Message.ClientMsgID == "g4-2" })
	seq, epoch := pushedTo.Message.Seq, pushedTo.Message.Epoch
	pushed := ann.until("receipt", func(f obclient.Frame) bool { return f.ConvID == "g4" && f.Seq == seq && f.State == StatePushed })
	if pushed.Pushed != 1 || pushed.Delivered != 0 || pushed.Read != 0 || pushed.Members != 2 {
		t.Fatalf("ann's pushed receipt is %s, want pushed to 1 of 2, none delivered", pushed.Raw)
	}
	if rc := receipts(seq); rc.State != StatePushed || *rc.Pushed != 1 || *rc.Delivered != 0 {
		t.Fatalf("before the ack the receipts are %+v, want pushed to 1", rc)
	}

	if err := ben.live.Ack(ctx, []obclient.AckItem{{ConvID: "g4", Seq: seq, Epoch: epoch}}, false); err != nil {
		t.Fatal(err)
	}
	delivered := ann.until("receipt", func(f obclient.Frame) bool { return f.ConvID == "g4" && f.Seq == seq && f.State == StateDelivered })
	if delivered.Delivered != 1 || delivered.Pushed != 1 || delivered.Read != 0 {
		t.Fatalf("ann's delivered receipt is %s", delivered.Raw)
	}
	eventually(t, "the receipts answer shows delivered", func() (bool, string) {
		rc := receipts(seq)
		return rc.State == StateDelivered && *rc.Delivered == 1, fmt.Sprintf("%+v", rc)
	})

	if err := ben.http.Read(ctx, []obclient.AckItem{{ConvID: "g4", Seq: seq}}); err != nil {
		t.Fatal(err)
	}
	read := ann.until("receipt", func(f obclient.Frame) bool { return f.ConvID == "g4" && f.Seq == seq && f.State == StateRead })
	if read.Read != 1 || read.Members != 2 {
		t.Fatalf("ann's read receipt is %s, want read by 1 of 2", read.Raw)
	}
	if rc := receipts(seq); rc.State != StateRead || *rc.Read != 1 || *rc.Members != 2 {
		t.Fatalf("after the read the receipts are %+v, want read by 1 of 2", rc)
	}
}
