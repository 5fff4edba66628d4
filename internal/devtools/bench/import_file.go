package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ImportFileOptions shapes a generated import file (WriteImportFile).
type ImportFileOptions struct {
	// Messages and Conversations: how many lines, over how many single chats.
	Messages, Conversations int
	// Grouped writes each conversation's messages together, oldest first (an export by
	// conversation); by default message i goes to conversation i mod Conversations, so that
	// every batch of the import touches as many conversations as it can (an export by time).
	Grouped bool
}

// ImportPeer is the user at one end of conversation k of a generated import file; the other
// end is ImportHub(k). Each of the 50 hubs has every 50th conversation.
func ImportPeer(k int) string { return fmt.Sprintf("imp%06d", k) }

// ImportHub is the user at the other end of conversation k of a generated import file.
func ImportHub(k int) string { return fmt.Sprintf("hub%02d", k%50) }

// WriteImportFile writes a JSON Lines file for `msggate import`: messages with OpenIM's field
// names, a client message ID each, senders alternating between the two ends of a chat.
func WriteImportFile(w io.Writer, o ImportFileOptions) error {
	if o.Messages <= 0 || o.Conversations <= 0 {
		return fmt.Errorf("an import file needs messages and conversations, got %d and %d", o.Messages, o.Conversations)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	perConv := (o.Messages + o.Conversations - 1) / o.Conversations
	for i := range o.Messages {
		k, n := i%o.Conversations, i/o.Conversations // conversation, and the message's place in it
		if o.Grouped {
			k, n = i/perConv, i%perConv
		}
		from, to := ImportPeer(k), ImportHub(k)
		if n%2 == 1 {
			from, to = to, from
		}
		line, err := json.Marshal(map[string]any{
			"send_id": from, "recv_id": to, "client_msg_id": fmt.Sprintf("gen-%d-%d", k, n),
			"content_type": 101, "content": fmt.Sprintf("message %d of an imported chat, with some words to weigh what a real one does", n),
			"send_time": base + int64(i)*1000,
		})
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
