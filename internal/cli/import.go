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
	"time"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
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

// ImportPosition is where the last batch whose every message is stored ends in the input: its
// last line and the byte offset right after it. An import that stops (an error, a signal, a
// crash) leaves it in FILE.import-position; -resume starts reading there. A batch cut half-way
// is read again, and what it stored already is found by client message ID, not stored twice.
type ImportPosition struct {
	Line   int   `json:"line"`
	Offset int64 `json:"offset"`
}

// importBatch is how many messages go to the ingest path at once.
const importBatch = 500

// importWindow is how many lines the import reads before it stores them, grouped by
// conversation (each conversation's messages in file order, so their seqs follow it). An
// export ordered by time touches a new conversation on almost every line: stored as read, a
// batch would write one slot into each of hundreds of chunks, each a whole-chunk rewrite on
// FerretDB; grouped, it writes a run of slots per chunk. It is also the step of the recorded
// position: a run cut inside a window reads the window again. A variable for the tests only.
var importWindow = 100_000

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
// through the ingest path, importWindow lines at a time grouped by conversation, importBatch
// messages per batch. A line without client_msg_id gets one derived from its bytes, so
// running the same file again stores nothing twice. Bad lines are counted and named in the
// summary, not fatal. r is read from from (the lines before from.Line were read by an earlier
// run); size is the whole input's. progress, when not nil, gets a progress bar over the file's
// size. committed, when not nil, is told the position after each stored window.
func importMessages(ctx context.Context, m *gateway.Gateway, r io.Reader, from ImportPosition, size int64, progress io.Writer, committed func(ImportPosition) error) (ImportSummary, error) {
	sum := ImportSummary{Position: from}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	var window []windowed
	windowStart, read := from.Offset, from.Offset
	lineNo := from.Line
	flush := func() error {
		// Stable: each conversation's messages stay in file order.
		sort.SliceStable(window, func(i, j int) bool { return window[i].conv < window[j].conv })
		batch := make([]*im.Message, 0, importBatch)
		for done := 0; done < len(window); {
			batch = batch[:0]
			for _, w := range window[done:min(done+importBatch, len(window))] {
				batch = append(batch, w.msg)
			}
			results, err := m.Ingest.Ingest(ctx, batch)
			if err != nil {
				return fmt.Errorf("storing the lines %d to %d: %w", sum.Position.Line+1, lineNo, err)
			}
			for _, r := range results {
				p := r.Placements[0]
				switch {
				case p.Seq == 0:
					sum.Published++
				case p.Duplicate:
					sum.Duplicates++
				default:
					sum.Stored++
				}
			}
			done += len(batch)
			drawProgress(progress, windowStart+(read-windowStart)*int64(done)/int64(len(window)), size, sum.Stored+sum.Duplicates+sum.Published)
		}
		window = window[:0]
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
				window = append(window, w)
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
		if progress != nil && from.Line > 0 {
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
