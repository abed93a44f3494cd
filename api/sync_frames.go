package api

import (
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/offlinebox/offlinebox/schemas"
)

// Compressing each shared run of messages once. In a reconnect storm the
// syncs of one group's members answer the same decoded entries (one slice
// read answered them all, redisstore/sync_collapse.go), and compressing
// the same bytes again for every answer was the largest part of what the
// API spent on a sync. A zstd answer is therefore written as a sequence of
// frames (RFC 8878 section 3: a decoder decodes concatenated frames as one
// content): each run of messages that came from one slice read is one
// frame, compressed by the first answer that needs it and spliced as it is
// into the others; what lies between (the envelope, the mentions, the
// blocks' headers, the summaries) is this answer's own and is compressed,
// or for a few hundred bytes stored raw, on its own.
//
// gzip answers stay one member compressed whole: the saving only matters
// for the many, and every client that asks for zstd decodes concatenated
// frames (the Go client's DecodeAll, browsers' streaming decoders).

// minSplicedRunBytes: a shorter run is compressed with its neighbours, as
// part of the answer's own bytes; a frame of its own would cost more than
// it saves.
const minSplicedRunBytes = 1024

// minOwnCodedBytes: the answer's own bytes between two runs, when fewer,
// go in a raw block: compressing them saves a few dozen bytes at the cost
// of an encoder.
const minOwnCodedBytes = 1024

// messageRun is a run of a conversation block's messages that came from
// one slice read: the first entry and how many follow it in that read.
// Entries are decoded once per read and shared by every sync the read
// answered, so the pair names the same bytes for all of them.
type messageRun struct {
	first *schemas.Sequenced
	n     int
}

// codedAnswer is an answer compressed as it was assembled: frames are its
// zstd frames in order (the shared ones as they are kept, copied only into
// the one write of the answer, writeFrames)
// and plainBytes counts its bytes before coding. Without any run spliced,
// frames is nil and plain is the answer (it goes through the usual
// negotiation).
type codedAnswer struct {
	frames     [][]byte
	plainBytes int
	plain      []byte
}

// codedBytes is the length of the answer on the wire.
func (a *codedAnswer) codedBytes() int {
	n := 0
	for _, f := range a.frames {
		n += len(f)
	}
	return n
}

// answerWriter receives an answer as it is assembled. Without an encoder
// out is the whole answer; with one, out holds this answer's own bytes
// since the last frame, and the runs go to frames as they are kept.
type answerWriter struct {
	z      *syncSizer
	out    []byte
	enc    *zstd.Encoder
	shared *sharedFrames
	frames [][]byte
	// flushed counts the plain bytes already in frames.
	flushed int
	runs    int
}

// messages writes one run of messages, comma-separated.
func (w *answerWriter) messages(run []*schemas.Sequenced) {
	if w.enc == nil {
		w.out = w.z.appendMessages(w.out, run)
		return
	}
	encs := w.z.runEncodings(run)
	n := len(run) - 1
	for _, b := range encs {
		n += len(b)
	}
	if n < minSplicedRunBytes {
		w.out = appendEncodings(w.out, encs)
		return
	}
	w.flush()
	w.frames = append(w.frames, w.shared.frame(messageRun{first: run[0], n: len(run)}, func() []byte {
		return appendEncodings(make([]byte, 0, n), encs)
	}, w.enc))
	w.flushed += n
	w.runs++
}

// flush writes the answer's own bytes so far as a frame.
func (w *answerWriter) flush() {
	switch b := w.out; {
	case len(b) == 0:
		return
	case len(b) < minOwnCodedBytes:
		w.frames = append(w.frames, appendRawZstdFrame(make([]byte, 0, len(b)+rawFrameOverhead), b))
	default:
		w.frames = append(w.frames, w.enc.EncodeAll(b, make([]byte, 0, len(b)/2+64)))
	}
	w.flushed += len(w.out)
	w.out = w.out[:0]
}

func (w *answerWriter) finish() *codedAnswer {
	if w.runs == 0 {
		return &codedAnswer{plain: w.out}
	}
	w.flush()
	return &codedAnswer{frames: w.frames, plainBytes: w.flushed}
}

// appendMessages appends the slice-form encodings of run, comma-separated.
func (z *syncSizer) appendMessages(out []byte, run []*schemas.Sequenced) []byte {
	return appendEncodings(out, z.runEncodings(run))
}

// appendEncodings appends encs, comma-separated.
func appendEncodings(out []byte, encs []json.RawMessage) []byte {
	for j, b := range encs {
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return out
}

// sharedFrames keeps the zstd frame of each run for as long as its first
// entry lives (a runTable, as sharedEncodings): bounded by the entries
// that requests in flight hold.
type sharedFrames struct {
	runs runTable[*runFrame]
}

// runFrame is one run's frame, made once: those who ask meanwhile wait.
type runFrame struct {
	once  sync.Once
	frame []byte
}

func newSharedFrames() *sharedFrames {
	return &sharedFrames{runs: newRunTable[*runFrame]()}
}

// frame is run's frame, compressing plain() (the run's encoding) if no
// other answer did yet.
func (c *sharedFrames) frame(run messageRun, plain func() []byte, enc *zstd.Encoder) []byte {
	f, _ := c.runs.find(run.first, run.n, func() *runFrame { return new(runFrame) })
	f.once.Do(func() {
		b := plain()
		f.frame = enc.EncodeAll(b, make([]byte, 0, len(b)/3+64))
	})
	return f.frame
}

// compressed counts the runs whose frame is kept.
func (c *sharedFrames) compressed() int { return c.runs.runs() }

func (c *sharedFrames) len() int { return c.runs.len() }

// zstdMagic opens every zstd frame (RFC 8878 section 3.1.1).
const zstdMagic = 0xFD2FB528

// rawFrameOverhead is the most a raw frame of up to maxRawBlock bytes
// adds: the magic, the descriptor, a content size of 4 bytes, a block
// header.
const rawFrameOverhead = 4 + 1 + 4 + 3

// maxRawBlock is the largest block of a frame (RFC 8878 section 3.1.1.2.4).
const maxRawBlock = 128 << 10

// appendRawZstdFrame appends a zstd frame that holds b as it is: one
// single-segment frame (its content size said, no window descriptor), raw
// blocks of at most maxRawBlock, no checksum.
func appendRawZstdFrame(out, b []byte) []byte {
	out = binary.LittleEndian.AppendUint32(out, zstdMagic)
	// Frame_Header_Descriptor: Single_Segment_flag (bit 5) and the size of
	// the Frame_Content_Size field (bits 7-6: 1, 2, 4 or 8 bytes).
	switch n := uint64(len(b)); {
	case n < 256:
		out = append(out, 0x20, byte(n))
	case n < 65536+256:
		out = append(out, 0x60)
		out = binary.LittleEndian.AppendUint16(out, uint16(n-256))
	case n <= 1<<32-1:
		out = append(out, 0xA0)
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
	default:
		out = append(out, 0xE0)
		out = binary.LittleEndian.AppendUint64(out, n)
	}
	for {
		size := min(len(b), maxRawBlock)
		// Block_Header: Last_Block (bit 0), Block_Type 0 = raw (bits 1-2),
		// Block_Size (bits 3-23), little-endian in 3 bytes.
		h := uint32(size) << 3
		if size == len(b) {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
		out = append(out, b[:size]...)
		b = b[size:]
		if len(b) == 0 {
			return out
		}
	}
}
