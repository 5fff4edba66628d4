package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/msggate/msggate/internal/search"
)

// corpus generates the bench's messages from a fixed seed: the same flags give the same
// messages, in the same order, on every machine and for every engine.
//
// Shape: conversations c00000…; the first busyGroups are busy groups that get a fifth of all
// messages between them, the rest share the others evenly. Three quarters of the messages are
// English-like (3-15 words, Zipf-distributed over a vocabulary of common English words and
// then made-up words, so some words are everywhere and most are rare), a fifth Chinese (2-12
// common words run together, with Chinese punctuation), the rest both. Send times step about
// 2.6 s apart, so a million messages span a month. Senders are members of the conversation.
// Content types: 90% text (101), 5% picture (102, the text is its caption), 5% file (105).
type corpus struct {
	rng           *rand.Rand
	conversations int
	busyGroups    int
	vocab         []string
	zipf          *rand.Zipf
	nextSeq       []int64
	n             int
	// wordCount counts the messages holding each word, for picking rare words afterwards.
	wordCount map[string]int
}

const (
	baseTime   = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z, ms
	stepMillis = 2_600
	busyShare  = 0.2
)

func newCorpus(seed uint64, conversations int) *corpus {
	rng := rand.New(rand.NewPCG(seed, 0x5ea7c4))
	c := &corpus{
		rng:           rng,
		conversations: conversations,
		busyGroups:    max(1, conversations/100),
		nextSeq:       make([]int64, conversations),
		wordCount:     map[string]int{},
	}
	c.vocab = append(c.vocab, commonEnglish...)
	for len(c.vocab) < 50_000 {
		c.vocab = append(c.vocab, madeUpWord(rng))
	}
	c.zipf = rand.NewZipf(rng, 1.07, 2, uint64(len(c.vocab)-1))
	return c
}

func convID(i int) string { return fmt.Sprintf("c%05d", i) }

// member is the k-th member of conversation conv: busy groups have 50, the others 5.
func (c *corpus) member(conv, k int) string {
	return fmt.Sprintf("u%05d", (conv*7919+k*104729)%100_000)
}

func (c *corpus) members(conv int) int {
	if conv < c.busyGroups {
		return 50
	}
	return 5
}

// next is the corpus's next message.
func (c *corpus) next() search.Doc {
	var conv int
	if c.rng.Float64() < busyShare {
		conv = c.rng.IntN(c.busyGroups)
	} else {
		conv = c.busyGroups + c.rng.IntN(c.conversations-c.busyGroups)
	}
	c.nextSeq[conv]++
	d := search.Doc{
		Key:         search.Key{ConversationID: convID(conv), Seq: c.nextSeq[conv]},
		SenderID:    c.member(conv, c.rng.IntN(c.members(conv))),
		ContentType: 101,
		SendTime:    baseTime + int64(c.n)*stepMillis + c.rng.Int64N(stepMillis),
	}
	switch r := c.rng.Float64(); {
	case r < 0.05:
		d.ContentType = 102
	case r < 0.10:
		d.ContentType = 105
	}
	switch r := c.rng.Float64(); {
	case r < 0.75:
		d.Text = c.english(3 + c.rng.IntN(13))
	case r < 0.95:
		d.Text = c.chinese(2 + c.rng.IntN(11))
	default:
		d.Text = c.english(2+c.rng.IntN(6)) + " " + c.chinese(2+c.rng.IntN(5))
	}
	c.n++
	return d
}

func (c *corpus) english(words int) string {
	seen := map[string]bool{}
	var b strings.Builder
	for i := range words {
		w := c.vocab[c.zipf.Uint64()]
		if !seen[w] {
			seen[w] = true
			c.wordCount[w]++
		}
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteString([]string{".", "?", "!", ""}[c.rng.IntN(4)])
	return b.String()
}

func (c *corpus) chinese(words int) string {
	var b strings.Builder
	for i := range words {
		// Common words first: squaring a uniform draw favours the head of the list.
		u := c.rng.Float64()
		b.WriteString(commonChinese[int(u*u*float64(len(commonChinese)))])
		if i%4 == 3 && i < words-1 {
			b.WriteString("，")
		}
	}
	b.WriteString("。")
	return b.String()
}

// madeUpWord is a pronounceable word of 2-4 syllables, for the vocabulary's long tail.
func madeUpWord(rng *rand.Rand) string {
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	var b strings.Builder
	for range 2 + rng.IntN(3) {
		b.WriteByte(cons[rng.IntN(len(cons))])
		b.WriteByte(vows[rng.IntN(len(vows))])
	}
	if rng.IntN(2) == 0 {
		b.WriteByte(cons[rng.IntN(len(cons))])
	}
	return b.String()
}

// wordsWithCount returns up to n words found in between lo and hi messages, for rare-word
// queries.
func (c *corpus) wordsWithCount(lo, hi, n int) []string {
	var out []string
	for _, w := range c.vocab {
		if k := c.wordCount[w]; k >= lo && k <= hi {
			out = append(out, w)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// expectedShare is the share of messages holding word w, measured so far.
func (c *corpus) share(w string) float64 {
	if c.n == 0 {
		return math.NaN()
	}
	return float64(c.wordCount[w]) / float64(c.n)
}

var commonEnglish = strings.Fields(`the to and you a i it is of that in we for on this be have
are with can meeting not just do at will so get what but about tomorrow today your me if was
my all lunch know time from up out call please one thanks like there go how team project need
they new when now ok more then send report think back see good here also let week update
friday monday review check yes should sure would done could make some great still morning
night plan work after before ready free file photo picture doc deadline office home later
any sorry agree next last client budget release bug fix test deploy meet soon weekend trip`)

var commonChinese = strings.Fields(`我们 今天 明天 会议 项目 时间 问题 大家 工作 一下 可以 没有 这个
那个 已经 还是 需要 知道 现在 下午 上午 晚上 北京 上海 广州 深圳 客户 报告 文件 照片 周末 星期五
星期一 开会 吃饭 午饭 谢谢 好的 收到 确认 安排 计划 进度 测试 发布 修复 版本 服务器 数据 用户
产品 设计 方案 预算 合同 邮件 电话 地址 时间表 办公室 出差 机场 酒店 天气 下雨 高铁 地铁 咖啡
东京 大阪 首尔 会いましょう 明日 今日 ありがとう 회의 내일 서울 감사합니다`)
