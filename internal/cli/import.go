package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	gosync "sync"
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
	"github.com/msggate/msggate/internal/ingest"
)

// Import: msggate import [-resume] FILE
func Import(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var resume bool
	m, fs, err := openForCommand(ctx, "import", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&resume, "resume", false, "continue after the position an earlier run of the same FILE recorded in FILE"+positionSuffix)
	})
	if err != nil {
		return err
	}
	defer m.Close()
	if fs.NArg() != 1 {
		return errors.New("usage: msggate import [flags] [-resume] FILE (JSON Lines of messages with OpenIM field names)")
	}
	start := time.Now()
	sum, err := importFile(ctx, m, fs.Arg(0), resume, stderr)
	for _, e := range sum.Errors {
		fmt.Fprintln(stderr, e)
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "%s in %s (%.0f lines/s)\n", sum, elapsed.Round(time.Millisecond), float64(sum.Lines)/max(elapsed.Seconds(), 1e-3))
	if err != nil && sum.Position.Line > 0 {
		fmt.Fprintf(stderr, "stored through line %d; run again with -resume to continue after it\n", sum.Position.Line)
	}
	return err
}

// positionSuffix names the file beside an import's input where it records how far it got.
const positionSuffix = ".import-position"

// ImportPosition is how far an import stored its input: every line through Line (ending
// right before the byte Offset), and, within the window read after it, its first Batches
// batches (an import stores a window's batches side by side, and records the first ones that
// are all stored). An import that stops (an error, a signal, a crash) leaves it in
// FILE.import-position; -resume starts reading at Offset and skips those batches, when the
// window and batch sizes are the ones they were counted with. A batch cut half-way is stored
// again, and what it stored already is found by client message ID, not stored twice.
type ImportPosition struct {
	Line   int   `json:"line"`
	Offset int64 `json:"offset"`
	// Batches, Window and BatchSize: the batches stored of the next window, and the sizes
	// that made them.
	Batches   int `json:"batches,omitempty"`
	Window    int `json:"window,omitempty"`
	BatchSize int `json:"batch_size,omitempty"`
}

// importBatch is how many messages go to the ingest path at once (its Import).
const importBatch = 1000

// importWorkers is how many batches are stored side by side: a batch waits on store and Redis
// round trips for most of its time.
const importWorkers = 2

// importWindow is how many lines the import reads before it stores them, grouped by
// conversation (each conversation's messages in file order, so their seqs follow it). An
// export ordered by time touches a new conversation on almost every line: stored as read, a
// batch would write one slot into each of hundreds of chunks, each a whole-chunk rewrite on
// FerretDB; grouped, it writes a run of slots per chunk, and a chunk that the window fills
// from its first slot is inserted whole with the other new chunks of its batch. The window
// keeps the lines' bytes only (about the file's size for a window that holds it all). A
// variable for the tests only.
var importWindow = 1_000_000

// maxImportLine bounds one line of an import file (a message with 64 KiB of content and its
// fields fits comfortably).
const maxImportLine = 1 << 20

// ImportSummary is what an import did.
type ImportSummary struct {
	Lines      int // non-empty lines read
	Stored     int // messages stored by this run
	Duplicates int // messages stored by an earlier run (same client message ID)
	Published  int // messages that are not stored (isHistory false)
	Rejected   int // lines that are not a valid message
	Errors     []string
	// Position is how far the input is stored: its last batch whose messages are all stored.
	Position ImportPosition
}

func (s ImportSummary) String() string {
	return fmt.Sprintf("%d lines: %d stored, %d already there, %d not stored (transient), %d rejected",
		s.Lines, s.Stored, s.Duplicates, s.Published, s.Rejected)
}

// importMessages reads JSON Lines of messages with OpenIM's field names (send_id, recv_id,
// group_id, client_msg_id, content_type, content, send_time, options, ...) and stores them
// through the ingest path's bulk import, importWindow lines at a time grouped by
// conversation, importBatch messages per batch, importWorkers batches side by side (the
// batches of one conversation one after the other). A line without client_msg_id gets one
// derived from its bytes, so running the same file again stores nothing twice. Bad lines are
// counted and named in the summary, not fatal. r is read from from (the lines before
// from.Line were read by an earlier run, and from.Batches batches of the window after them
// stored); size is the whole input's. progress, when not nil, gets a progress bar over the
// file's size. committed, when not nil, is told the position after each stored batch.
func importMessages(ctx context.Context, m *gateway.Gateway, r io.Reader, from ImportPosition, size int64, progress io.Writer, committed func(ImportPosition) error) (ImportSummary, error) {
	sum := ImportSummary{Position: ImportPosition{Line: from.Line, Offset: from.Offset}}
	skip := 0
	if from.Window == importWindow && from.BatchSize == importBatch {
		skip = from.Batches
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	var window importWindowLines
	windowStart, read := from.Offset, from.Offset
	lineNo := from.Line
	flush := func() error {
		batches, continues := window.batches()
		var mu gosync.Mutex
		done := make([]bool, len(batches))
		next := 0 // the first batch not known to be stored
		storedMsgs := 0
		for i := range min(skip, len(batches)) {
			done[i] = true
			sum.Duplicates += len(batches[i])
			storedMsgs += len(batches[i])
		}
		skip = 0
		record := func(i int) error {
			mu.Lock()
			defer mu.Unlock()
			done[i] = true
			storedMsgs += len(batches[i])
			for next < len(batches) && done[next] {
				next++
			}
			drawProgress(progress, windowStart+(read-windowStart)*int64(storedMsgs)/int64(max(window.len(), 1)), size, sum.Stored+sum.Duplicates+sum.Published)
			if committed == nil || next == len(batches) {
				return nil
			}
			return committed(ImportPosition{Line: sum.Position.Line, Offset: sum.Position.Offset, Batches: next, Window: importWindow, BatchSize: importBatch})
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var firstErr error
		var wg gosync.WaitGroup
		for _, lane := range lanes(continues, importWorkers) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, i := range lane {
					if done[i] {
						continue // stored by the run this one resumes
					}
					err := storeBatch(wctx, m, &window, batches[i], &mu, &sum)
					if err == nil {
						err = record(i)
					}
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						cancel()
						return
					}
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return fmt.Errorf("storing the lines %d to %d: %w", sum.Position.Line+1, lineNo, firstErr)
		}
		window.reset()
		windowStart = read
		sum.Position = ImportPosition{Line: lineNo, Offset: read}
		if committed != nil {
			return committed(sum.Position)
		}
		return nil
	}
	windowLines := 0
	for sc.Scan() {
		lineNo++
		windowLines++
		line := sc.Bytes()
		read += int64(len(line)) + 1
		if len(strings.TrimSpace(string(line))) > 0 {
			sum.Lines++
			w, err := parseImportLine(line)
			if err != nil {
				sum.Rejected++
				if len(sum.Errors) < 20 {
					sum.Errors = append(sum.Errors, fmt.Sprintf("line %d: %s", lineNo, im.ErrorMessage(err)))
				}
			} else {
				window.add(w.conv, line)
			}
		}
		if windowLines == importWindow {
			if err := flush(); err != nil {
				return sum, err
			}
			windowLines = 0
		}
	}
	if err := sc.Err(); err != nil {
		return sum, fmt.Errorf("reading line %d: %w", lineNo+1, err)
	}
	if err := flush(); err != nil {
		return sum, err
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	return sum, nil
}

// importTries is how often a batch is tried when the store or Redis is unavailable.
const importTries = 5

// storeBatch stores one batch of a window (the indexes of its lines) and counts it in sum.
func storeBatch(ctx context.Context, m *gateway.Gateway, window *importWindowLines, batch []int, mu *gosync.Mutex, sum *ImportSummary) error {
	msgs := make([]*im.Message, len(batch))
	for j, i := range batch {
		w, err := parseImportLine(window.line(i))
		if err != nil {
			return err // it was valid when read
		}
		msgs[j] = w.msg
	}
	var results []ingest.Result
	var err error
	// retried: a try failed, after storing some of the batch, perhaps all: what the last try
	// finds stored counts as stored by this run.
	retried := false
	for try := 1; ; try++ {
		results, err = m.Ingest.Import(ctx, msgs)
		if err == nil || im.ErrorCode(err) != im.EUNAVAILABLE || try == importTries {
			break
		}
		// A store or Redis that is slow to answer (a busy machine, a gateway's traffic beside
		// the import) is waited for: the batch is stored again, and what its first try stored
		// is found by client message ID.
		retried = true
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 2 * time.Second):
		}
	}
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range results {
		p := r.Placements[0]
		switch {
		case p.Seq == 0:
			sum.Published++
		case p.Duplicate && !retried:
			sum.Duplicates++
		default:
			sum.Stored++
		}
	}
	return nil
}

// importWindowLines holds the valid lines of a window: their bytes, one after the other, and
// the conversation each goes to first.
type importWindowLines struct {
	data  []byte
	ends  []int
	convs []string
	// interned shares one string per conversation among its lines.
	interned map[string]string
}

func (w *importWindowLines) add(conv string, line []byte) {
	if w.interned == nil {
		w.interned = map[string]string{}
	}
	c, ok := w.interned[conv]
	if !ok {
		w.interned[conv] = conv
		c = conv
	}
	w.data = append(w.data, line...)
	w.ends = append(w.ends, len(w.data))
	w.convs = append(w.convs, c)
}

func (w *importWindowLines) len() int { return len(w.ends) }

func (w *importWindowLines) line(i int) []byte {
	from := 0
	if i > 0 {
		from = w.ends[i-1]
	}
	return w.data[from:w.ends[i]]
}

func (w *importWindowLines) reset() {
	w.data, w.ends, w.convs, w.interned = w.data[:0], w.ends[:0], w.convs[:0], nil
}

// batches groups the window's lines by conversation (each conversation's lines in file order)
// and cuts them into batches of at most importBatch lines: whole conversations together, or
// consecutive parts of one conversation that is larger than a batch, each part a batch of its
// own. continues[i] is true when batch i starts with the conversation batch i-1 ends with.
func (w *importWindowLines) batches() (batches [][]int, continues []bool) {
	order := make([]int, w.len())
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return w.convs[order[a]] < w.convs[order[b]] })
	var out [][]int
	var cur []int
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && w.convs[order[j]] == w.convs[order[i]] {
			j++
		}
		conv := order[i:j]
		if len(cur)+len(conv) > importBatch && len(cur) > 0 {
			out, cur = append(out, cur), nil
		}
		for len(conv) > importBatch {
			out, conv = append(out, conv[:importBatch]), conv[importBatch:]
		}
		cur = append(cur, conv...)
		i = j
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	continues = make([]bool, len(out))
	for i := 1; i < len(out); i++ {
		prev := out[i-1]
		continues[i] = w.convs[out[i][0]] == w.convs[prev[len(prev)-1]]
	}
	return out, continues
}

// lanes deals the batches to n workers: the batches of one conversation (the parts of a
// conversation larger than a batch) go to one worker, in order, so that its seqs follow the
// file; the others go round.
func lanes(continues []bool, n int) [][]int {
	out := make([][]int, n)
	k := 0
	for i, c := range continues {
		if c {
			// It continues the previous batch's conversation: after it, in its lane.
			out[(k+n-1)%n] = append(out[(k+n-1)%n], i)
			continue
		}
		out[k%n] = append(out[k%n], i)
		k++
	}
	return out
}

// windowed is a valid line of a window and the conversation it goes to first.
type windowed struct {
	conv string
	msg  *im.Message
}

// parseImportLine reads a line into a message valid to send.
func parseImportLine(line []byte) (windowed, error) {
	var msg im.Message
	if err := json.Unmarshal(line, &msg); err != nil {
		return windowed{}, im.Errorf(im.EINVALID, "not a JSON message: %v", err)
	}
	if msg.ClientMsgID == "" {
		h := sha256.Sum256(line)
		msg.ClientMsgID = "import-" + hex.EncodeToString(h[:12])
	}
	if err := im.ValidateForSend(&msg); err != nil {
		return windowed{}, err
	}
	places, err := im.Categorise(&msg)
	if err != nil {
		return windowed{}, err
	}
	return windowed{conv: places[0].ConversationID, msg: &msg}, nil
}

// drawProgress redraws a one-line progress bar: bytes of the file stored, and messages.
func drawProgress(w io.Writer, read, size int64, messages int) {
	if w == nil || size <= 0 {
		return
	}
	const width = 30
	frac := min(float64(read)/float64(size), 1)
	done := int(frac * width)
	fmt.Fprintf(w, "\r[%s%s] %3.0f%%  %d messages", strings.Repeat("=", done), strings.Repeat(" ", width-done), frac*100, messages)
}

// importFile opens path and imports it (see importMessages), from the position an earlier run
// recorded when resume is set. It records the position after each batch in
// path+positionSuffix, and removes that file once the whole input is stored.
func importFile(ctx context.Context, m *gateway.Gateway, path string, resume bool, progress io.Writer) (ImportSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportSummary{}, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	posPath := path + positionSuffix
	var from ImportPosition
	if resume {
		if from, err = readPosition(posPath, size); err != nil {
			return ImportSummary{}, err
		}
		if _, err := f.Seek(from.Offset, io.SeekStart); err != nil {
			return ImportSummary{}, err
		}
		if progress != nil && from.Batches > 0 {
			fmt.Fprintf(progress, "resuming after line %d and %d batches of the lines after it\n", from.Line, from.Batches)
		} else if progress != nil && from.Line > 0 {
			fmt.Fprintf(progress, "resuming after line %d\n", from.Line)
		}
	}
	sum, err := importMessages(ctx, m, f, from, size, progress, func(p ImportPosition) error {
		return writePosition(posPath, p)
	})
	if err == nil {
		err = os.Remove(posPath)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	return sum, err
}

// readPosition reads a recorded position; none recorded is the start of the input.
func readPosition(path string, size int64) (ImportPosition, error) {
	var p ImportPosition
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Line < 0 || p.Offset < 0 || p.Offset > size {
		return ImportPosition{}, fmt.Errorf("%s holds no position within the input (%q); remove it to start over", path, strings.TrimSpace(string(b)))
	}
	return p, nil
}

// writePosition records a position: written aside and renamed, so that a crash leaves the
// previous position or this one, never a torn file.
func writePosition(path string, p ImportPosition) error {
	b, _ := json.Marshal(p)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("recording the import position: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("recording the import position: %w", err)
	}
	return nil
}
