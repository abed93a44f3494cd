package harness

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Message bodies: UTF-8 text of 50 to 400 bytes, length uniform over that
// range (mean 225 bytes); 60% Chinese sentences (3 bytes per character),
// 40% English words, as in an enterprise chat of the founding scenario.
const (
	BodyMinBytes = 50
	BodyMaxBytes = 400
	// BodyDescription is what the result files say about the bodies.
	BodyDescription = "UTF-8 text, length uniform 50-400 bytes (mean 225), 60% Chinese / 40% English"
)

var (
	chineseWords = []string{"今天", "下午", "三点", "开会", "请", "大家", "准时", "参加", "项目", "进度",
		"客户", "反馈", "需要", "尽快", "处理", "这个", "问题", "已经", "修复", "上线", "明天", "评审",
		"方案", "确认", "一下", "好的", "收到", "谢谢", "老板", "周报", "数据", "报表", "合同", "签字"}
	englishWords = []string{"the", "meeting", "is", "moved", "to", "three", "please", "review", "the",
		"draft", "before", "tomorrow", "customer", "asked", "about", "invoice", "deploy", "finished",
		"thanks", "ok", "will", "check", "and", "report", "back", "numbers", "look", "good", "ship", "it"}
)

// Bodies generates repeatable message bodies.
type Bodies struct {
	rng *rand.Rand
}

// NewBodies returns a generator seeded with seed.
func NewBodies(seed int64) *Bodies {
	return &Bodies{rng: rand.New(rand.NewPCG(uint64(seed), 0x0ff1ceb0c5))}
}

// Next is one body of BodyMinBytes..BodyMaxBytes bytes.
func (b *Bodies) Next() []byte {
	want := BodyMinBytes + b.rng.IntN(BodyMaxBytes-BodyMinBytes+1)
	words, sep := englishWords, " "
	if b.rng.IntN(10) < 6 {
		words, sep = chineseWords, ""
	}
	var sb strings.Builder
	sb.Grow(want + 16)
	for sb.Len() < want {
		w := words[b.rng.IntN(len(words))]
		if sb.Len()+len(sep)+len(w) > want {
			break
		}
		if sb.Len() > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(w)
	}
	// Fill the last bytes with ASCII so every length is reachable.
	for sb.Len() < want {
		sb.WriteByte('.')
	}
	return []byte(sb.String())
}

// UUID is a repeatable random UUID (version 4 form), the client_msg_id a
// real client generates: ids cost memory in timelines and dedupe maps, so
// they are as long as real ones.
func (b *Bodies) UUID() string {
	r := b.rng
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff,
		0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
}

// Intn is a repeatable random number in [0, n) for workload choices.
func (b *Bodies) Intn(n int) int { return b.rng.IntN(n) }
