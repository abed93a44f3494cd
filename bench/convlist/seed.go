package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

const (
	bigUser      = "vip"
	startMS      = 1_700_000_000_000
	mentionEvery = 50
	largeGroups  = 3
	otherUsers   = 20
	otherConvs   = 50
	seedWorkers  = 4
	inboxBatch   = 2000
)

// seedDirects gives user n direct conversations through the real write
// path: Sequence for each conversation's one message from a peer, then
// ApplyInboxes for the user, pipelined inboxBatch at a time. Conversation
// i is written at startMS+i and mentions the user every mentionEvery.
func seedDirects(ctx context.Context, s *redisstore.Store, user string, n int) error {
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	errs := make(chan error, seedWorkers)
	for w := range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += seedWorkers {
				conv := fmt.Sprint(user, "-d", i)
				m := &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Kind: schemas.Kind_KIND_MESSAGE,
					ClientMsgId: "m-" + conv, Sender: "peer-" + conv, Recipients: []string{user}, ContentType: "text/plain",
					Body: []byte("hello")}
				res, err := s.Sequence(ctx, conv, []*schemas.Message{m}, nil, startMS+int64(i))
				if err != nil {
					errs <- err
					return
				}
				seqs[i] = res.Items[0].Seq
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("seed %s: %w", user, err)
	}
	for from := 0; from < n; from += inboxBatch {
		var ups []redisstore.InboxUpdate
		for i := from; i < min(from+inboxBatch, n); i++ {
			kind := redisstore.InboxDelivered
			if i%mentionEvery == 0 {
				kind = redisstore.InboxMentioned
			}
			ups = append(ups, redisstore.InboxUpdate{User: user, Conv: fmt.Sprint(user, "-d", i), Form: redisstore.InboxDirect,
				Events: []redisstore.InboxEvent{{Kind: kind, Seq: seqs[i], WriteMS: startMS + int64(i)}}})
		}
		_, errs := s.ApplyInboxes(ctx, ups)
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("seed %s: %w", user, err)
			}
		}
	}
	return nil
}

// seedLarge puts user in a large group (its unread and order come from the
// group's own keys).
func seedLarge(ctx context.Context, s *redisstore.Store, user, conv string) error {
	join := &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN,
		ClientMsgId: "j-" + conv, Sender: "founder", Recipients: []string{"founder", user}}
	msg := &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MESSAGE,
		ClientMsgId: "m-" + conv, Sender: "founder", ContentType: "text/plain", Body: []byte("news")}
	if _, err := s.Sequence(ctx, conv, []*schemas.Message{join, msg}, nil, startMS+1_000_000); err != nil {
		return fmt.Errorf("seed %s: %w", conv, err)
	}
	_, errs := s.ApplyInboxes(ctx, []redisstore.InboxUpdate{{User: user, Conv: conv, Form: redisstore.InboxLarge,
		Events: []redisstore.InboxEvent{{Kind: redisstore.InboxJoined, Seq: 1, WriteMS: startMS}}}})
	if errs[0] != nil {
		return fmt.Errorf("seed %s: %w", conv, errs[0])
	}
	return nil
}
