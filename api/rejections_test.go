package api

import (
	"context"
	"github.com/offlinebox/offlinebox/wire"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// TestADeviceAwayWhenItsMessageWasRefusedLearnsWhyOnItsNextRun: a message
// the API accepted and the pipeline then refused (a plain member adding
// someone: only owners and admins may) reaches no live device, since its
// sender has none online; the refusal is kept, GET /v1/rejections lists
// it, and the sender's SDK device moves it from sending to rejected with
// the reason and its code instead of waiting for its seq forever.
func TestADeviceAwayWhenItsMessageWasRefusedLearnsWhyOnItsNextRun(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("team", "alice", "bob"))
	bobTok := le.token("bob", "phone")
	le.waitMaxSeq(bobTok, "team", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := obclient.Open(ctx, obclient.Options{Base: le.nodes[0].URL(), Token: bobTok,
		Path: filepath.Join(t.TempDir(), "bob.db"), NoLive: true, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := time.Now().UnixMilli()
	id, err := d.Send(ctx, obclient.Outgoing{ConvID: "team", ConvType: "group", Kind: "member_join", Recipients: []string{"carol"}})
	if err != nil {
		t.Fatalf("the API refused what only the pipeline can: %v", err)
	}

	var list struct {
		Rejections []wire.Rejection `json:"rejections"`
	}
	eventually(t, "the refusal is listed", func() (bool, string) {
		le.callOK(200, "GET", "/v1/rejections", bobTok, nil, &list)
		return len(list.Rejections) == 1, ""
	})
	rj := list.Rejections[0]
	if rj.ClientMsgID != id || rj.ConvID != "team" || rj.Code != schemas.RefusalNotAllowed || rj.Reason != schemas.RefusalSentence(rj.Code) || rj.AtMS < before-1000 {
		t.Fatalf("bob's refusal is %+v, want %s of team, refused as only owners and admins add members, after %d", rj, id, before)
	}
	le.callOK(200, "GET", "/v1/rejections?since_ms="+strconv.FormatInt(rj.AtMS+1, 10), bobTok, nil, &list)
	if len(list.Rejections) != 0 {
		t.Fatalf("since after the refusal lists %+v, want nothing", list.Rejections)
	}
	le.callOK(200, "GET", "/v1/rejections", le.token("alice", "phone"), nil, &list)
	if len(list.Rejections) != 0 {
		t.Fatalf("alice's list holds bob's refusal: %+v", list.Rejections)
	}

	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(run) }()
	defer func() { stop(); <-done }()
	eventually(t, "the device moves its message from sending to rejected", func() (bool, string) {
		p, err := d.Pending(ctx)
		if err != nil {
			return false, err.Error()
		}
		r, err := d.Rejected(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(p) == 0 && len(r) == 1 && r[0].ClientMsgID == id && r[0].Reason == rj.Reason &&
			r[0].Code == obclient.RefusalNotAllowed, ""
	})
}
