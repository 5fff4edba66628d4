package fanout

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// redisFigures is what redis-server's INFO says at a moment.
type redisFigures struct {
	// Commands is the calls of every command since the start, INFO's own left out: the bench
	// asks INFO itself, and the gateway's work is what is measured.
	Commands int64
	// ByCommand is the calls of each command (lower case, as INFO names them).
	ByCommand map[string]int64
	// UsedMemory is used_memory: the bytes Redis holds for data and its own structures.
	UsedMemory int64
}

// redisInfo reads INFO commandstats and memory from the redis-server at addr. It speaks RESP
// itself: internal/cache is the only importer of go-redis, and two INFO calls need no client.
func redisInfo(addr string) (redisFigures, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return redisFigures{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	f := redisFigures{ByCommand: map[string]int64{}}
	for _, section := range []string{"commandstats", "memory"} {
		fmt.Fprintf(c, "*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n", len(section), section)
		text, err := readBulk(r)
		if err != nil {
			return redisFigures{}, fmt.Errorf("redis INFO %s: %w", section, err)
		}
		for _, line := range strings.Split(text, "\r\n") {
			switch {
			case strings.HasPrefix(line, "cmdstat_") && !strings.HasPrefix(line, "cmdstat_info:"):
				// cmdstat_get:calls=12,usec=...
				name, stats, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
				for _, kv := range strings.Split(stats, ",") {
					if v, ok := strings.CutPrefix(kv, "calls="); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							return redisFigures{}, fmt.Errorf("redis INFO: %q: %w", line, err)
						}
						f.Commands += n
						f.ByCommand[name] += n
					}
				}
			case strings.HasPrefix(line, "used_memory:"):
				if f.UsedMemory, err = strconv.ParseInt(strings.TrimPrefix(line, "used_memory:"), 10, 64); err != nil {
					return redisFigures{}, fmt.Errorf("redis INFO: %q: %w", line, err)
				}
			}
		}
	}
	return f, nil
}

// readBulk reads one bulk-string answer ($n, then n bytes and CRLF).
func readBulk(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", fmt.Errorf("redis: %s", line[1:])
	}
	if !strings.HasPrefix(line, "$") {
		return "", fmt.Errorf("redis: unexpected answer %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", fmt.Errorf("redis: unexpected answer %q", line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
