package api

import (
	"encoding/json"
	"strconv"

	"github.com/klauspost/compress/zstd"

	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// encode assembles the answer from the encodings the budget was counted
// on. It writes what json.Marshal(syncResponse{...}) wrote, byte for byte,
// but splices the message encodings in as they are: json.Marshal re-scans
// every json.RawMessage once per level of nesting, which cost more than
// encoding the messages did.
func (z *syncSizer) encode(res *readpath.SyncResult) ([]byte, error) {
	w := &answerWriter{z: z, out: make([]byte, 0, z.sizeHint(res))}
	if err := z.write(w, res); err != nil {
		return nil, err
	}
	return w.out, nil
}

// encodeZstd is encode compressed in zstd as spliced frames
// (sync_frames.go): the runs of messages already compressed by another
// answer are neither copied nor compressed again.
func (z *syncSizer) encodeZstd(res *readpath.SyncResult, enc *zstd.Encoder, frames *sharedFrames) (*codedAnswer, error) {
	w := &answerWriter{z: z, out: make([]byte, 0, 4096), enc: enc, shared: frames, frames: make([][]byte, 0, 2*len(res.Convs)+2)}
	if err := z.write(w, res); err != nil {
		return nil, err
	}
	return w.finish(), nil
}

// write writes the answer to w.
func (z *syncSizer) write(w *answerWriter, res *readpath.SyncResult) error {
	w.out = append(w.out, `{"device_id":`...)
	w.out = appendJSONString(w.out, z.device)
	w.out = append(w.out, `,"resync":`...)
	w.out = strconv.AppendBool(w.out, res.Resync)
	w.out = append(w.out, `,"mentions":[`...)
	for i, m := range res.Mentions {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, `{"conv_id":`...)
		w.out = appendJSONString(w.out, m.Conv)
		w.out = append(w.out, `,"all":`...)
		w.out = strconv.AppendBool(w.out, m.All)
		w.out = append(w.out, `,"message":`...)
		w.out = append(w.out, z.message(m.Message, fullForm)...)
		w.out = append(w.out, '}')
	}
	w.out = append(w.out, `],"mentions_more":`...)
	w.out = strconv.AppendBool(w.out, res.MentionsMore)
	if res.MentionsNext != nil {
		w.out = append(w.out, `,"mentions_next":`...)
		w.out = appendJSONString(w.out, res.MentionsNext.String())
	}
	w.out = append(w.out, `,"conversations":[`...)
	for i := range res.Convs {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if err := z.writeConv(w, &res.Convs[i]); err != nil {
			return err
		}
	}
	w.out = append(w.out, `],"summaries":[`...)
	for i, sm := range res.Summaries {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		b, err := json.Marshal(summaryOf(sm))
		if err != nil {
			return err
		}
		w.out = append(w.out, b...)
	}
	w.out = append(w.out, `],"omitted":`...)
	w.out = strconv.AppendInt(w.out, int64(res.Omitted), 10)
	w.out = append(w.out, '}')
	return nil
}

// writeConv writes a conversation block: its fields as json.Marshal
// writes them (messages is the last one), then the messages' encodings,
// a run per slice read they came from.
func (z *syncSizer) writeConv(w *answerWriter, c *readpath.SyncConv) error {
	cj := convJSON(c, nil)
	if p, ok := z.peers[c.Conv]; ok {
		d, r := p.Delivered, p.Read
		cj.PeerDeliveredSeq, cj.PeerReadSeq = &d, &r
	}
	head, err := json.Marshal(cj)
	if err != nil {
		return err
	}
	const emptyTail = `[]}`
	w.out = append(w.out, head[:len(head)-len(emptyTail)]...)
	w.out = append(w.out, '[')
	older := min(max(c.Older, 0), len(c.Messages))
	if older > 0 {
		w.messages(c.Messages[:older])
		if older < len(c.Messages) {
			w.out = append(w.out, ',')
		}
	}
	if older < len(c.Messages) {
		w.messages(c.Messages[older:])
	}
	w.out = append(w.out, ']', '}')
	return nil
}

// sizeHint is the answer's length give or take the blocks' headers, so
// that the buffer grows once or not at all.
func (z *syncSizer) sizeHint(res *readpath.SyncResult) int {
	n := 256 + 512*(len(res.Mentions)+len(res.Convs)+len(res.Summaries))
	for _, m := range res.Mentions {
		n += len(z.message(m.Message, fullForm))
	}
	for i := range res.Convs {
		for _, b := range z.runEncodings(res.Convs[i].Messages) {
			n += len(b) + 1
		}
	}
	return n
}
