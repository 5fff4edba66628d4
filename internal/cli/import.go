package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/msggate/msggate/internal/gateway"
	"github.com/msggate/msggate/internal/im"
)

// Import: msggate import FILE
func Import(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, fs, err := openForCommand(ctx, "import", args, stderr, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if fs.NArg() != 1 {
		return errors.New("usage: msggate import [flags] FILE (JSON Lines of messages with OpenIM field names)")
	}
	sum, err := importFile(ctx, m, fs.Arg(0), stderr)
	for _, e := range sum.Errors {
		fmt.Fprintln(stderr, e)
	}
	fmt.Fprintln(stdout, sum)
	return err
}

// importBatch is how many lines go to the ingest path at once.
const importBatch = 500

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
}

func (s ImportSummary) String() string {
	return fmt.Sprintf("%d lines: %d stored, %d already there, %d not stored (transient), %d rejected",
		s.Lines, s.Stored, s.Duplicates, s.Published, s.Rejected)
}

// importMessages reads JSON Lines of messages with OpenIM's field names (send_id, recv_id,
// group_id, client_msg_id, content_type, content, send_time, options, ...) and stores them
// through the ingest path in batches. A line without client_msg_id gets one derived from its
// bytes, so running the same file again stores nothing twice. Bad lines are counted and named
// in the summary, not fatal. progress, when not nil, gets a progress bar over the file's size.
func importMessages(ctx context.Context, m *gateway.Gateway, r io.Reader, size int64, progress io.Writer) (ImportSummary, error) {
	var sum ImportSummary
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	var batch []*im.Message
	var read int64
	lineNo := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		results, err := m.Ingest.Ingest(ctx, batch)
		if err != nil {
			return fmt.Errorf("storing the batch that ends at line %d: %w", lineNo, err)
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
		batch = batch[:0]
		drawProgress(progress, read, size, sum.Lines)
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		read += int64(len(line)) + 1
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		sum.Lines++
		msg, err := parseImportLine(line)
		if err == nil {
			err = im.ValidateForSend(msg)
		}
		if err == nil {
			_, err = im.Categorise(msg)
		}
		if err != nil {
			sum.Rejected++
			if len(sum.Errors) < 20 {
				sum.Errors = append(sum.Errors, fmt.Sprintf("line %d: %s", lineNo, im.ErrorMessage(err)))
			}
			continue
		}
		batch = append(batch, msg)
		if len(batch) == importBatch {
			if err := flush(); err != nil {
				return sum, err
			}
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

func parseImportLine(line []byte) (*im.Message, error) {
	var msg im.Message
	if err := json.Unmarshal(line, &msg); err != nil {
		return nil, im.Errorf(im.EINVALID, "not a JSON message: %v", err)
	}
	if msg.ClientMsgID == "" {
		h := sha256.Sum256(line)
		msg.ClientMsgID = "import-" + hex.EncodeToString(h[:12])
	}
	return &msg, nil
}

// drawProgress redraws a one-line progress bar: bytes read of the file, and lines so far.
func drawProgress(w io.Writer, read, size int64, lines int) {
	if w == nil || size <= 0 {
		return
	}
	const width = 30
	frac := min(float64(read)/float64(size), 1)
	done := int(frac * width)
	fmt.Fprintf(w, "\r[%s%s] %3.0f%%  %d lines", strings.Repeat("=", done), strings.Repeat(" ", width-done), frac*100, lines)
}

// importFile opens path and imports it (see importMessages).
func importFile(ctx context.Context, m *gateway.Gateway, path string, progress io.Writer) (ImportSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportSummary{}, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return importMessages(ctx, m, f, size, progress)
}
