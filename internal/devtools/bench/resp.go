package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// respPool is the baselines' Redis client: a few lines of RESP over a pool of connections,
// the least a handler can do to read Redis (the gateway reaches Redis through internal/cache).
type respPool struct {
	addr  string
	conns chan *respConn
}

type respConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func newRESPPool(addr string, size int) *respPool {
	return &respPool{addr: addr, conns: make(chan *respConn, size)}
}

func (p *respPool) get() (*respConn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	default:
	}
	c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriter(c)}, nil
}

func (p *respPool) put(c *respConn) {
	select {
	case p.conns <- c:
	default:
		c.c.Close()
	}
}

func (p *respPool) close() {
	for {
		select {
		case c := <-p.conns:
			c.c.Close()
		default:
			return
		}
	}
}

// do sends one command and returns its answer: bulk strings (nil for a null), as a list
// whether the answer was one bulk string or an array of them.
func (p *respPool) do(args ...string) ([][]byte, error) {
	c, err := p.get()
	if err != nil {
		return nil, err
	}
	out, err := c.do(args)
	if err != nil {
		c.c.Close()
		return nil, err
	}
	p.put(c)
	return out, nil
}

func (c *respConn) do(args []string) ([][]byte, error) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	line, err := c.line()
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+':
		return [][]byte{line[1:]}, nil
	case '-':
		return nil, errors.New("redis: " + string(line[1:]))
	case '$':
		b, err := c.bulk(line)
		return [][]byte{b}, err
	case '*':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return nil, err
		}
		out := make([][]byte, n)
		for i := range out {
			l, err := c.line()
			if err != nil {
				return nil, err
			}
			if l[0] != '$' {
				return nil, fmt.Errorf("redis: unexpected %q in an array", l)
			}
			if out[i], err = c.bulk(l); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unexpected answer %q", line)
}

// line reads one CRLF-terminated line, without the CRLF.
func (c *respConn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 {
		return nil, fmt.Errorf("redis: short line %q", l)
	}
	return l[:len(l)-2], nil
}

// bulk reads the body of a bulk string whose header is line ($-1: null).
func (c *respConn) bulk(line []byte) ([]byte, error) {
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 {
		return nil, err
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, err
	}
	return b[:n], nil
}
