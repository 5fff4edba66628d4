package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	gosync "sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/msggate/msggate/graph"
	"github.com/msggate/msggate/internal/admission"
	"github.com/msggate/msggate/internal/freshstack"
	"github.com/msggate/msggate/internal/im"
)

// wsTransport serves GraphQL over WebSocket with the graphql-transport-ws protocol and the
// legacy graphql-ws one (a client that names neither gets the latter, as gqlgen's transport
// did).
//
// It is msggate's own, not gqlgen's transport.Websocket, for what an idle subscribed device
// costs: gqlgen's holds three goroutines per connection and subscription besides the reader
// (a closer, the subscription's, and the resolver's feeding it), each with a stack. Here a
// connection is its reader, and a subscription one goroutine that both follows the stream and
// writes its events (see streamPump); keepalives and deadlines are timers.
type wsTransport struct {
	r        *graph.Resolver
	o        *options
	pacer    *admission.Pacer
	sessions *sessionWatch // nil when tokens cannot be withdrawn
}

// The subprotocols, in the order of preference.
const (
	protocolTransportWS = "graphql-transport-ws"
	protocolLegacyWS    = "graphql-ws"
)

// Close codes of the graphql-transport-ws protocol that msggate sends.
const (
	CloseBadMessage     = 4400
	CloseInitTimeout    = 4408
	CloseDuplicateID    = 4409
	CloseTooManyInits   = 4429 // the protocol's; shared with CloseTooManyConnections
	closeNormal         = 1000
	wsInitTimeout       = 10 * time.Second
	wsReadLimit         = 1 << 20 // gqlgen's default, which clients were served with
	wsControlWriteLimit = 10 * time.Second
)

func newWSTransport(r *graph.Resolver, o options) *wsTransport {
	return &wsTransport{r: r, o: &o, pacer: admission.NewPacer(o.ConnectionRate, o.ConnectionBurst),
		sessions: newSessionWatch(o.Authenticator, o.SessionCheckInterval, o.Logger)}
}

var _ graphql.Transport = (*wsTransport)(nil)

func (*wsTransport) Supports(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }

// Do serves one connection until it closes.
func (t *wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	var socket hijacked
	conn, err := websocket.Accept(smallBuffers{w, &socket}, r, &websocket.AcceptOptions{Subprotocols: []string{protocolTransportWS, protocolLegacyWS}})
	if err != nil {
		return // Accept answered the request
	}
	conn.SetReadLimit(wsReadLimit)
	// The connection outlives the request: net/http ends the request's context when Do
	// returns, which it does once the connection is authenticated (see below).
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConnection{
		t:       t,
		conn:    conn,
		socket:  socket,
		exec:    exec,
		headers: r.Header,
		legacy:  conn.Subprotocol() != protocolTransportWS,
		ctx:     ctx,
		ops:     map[string]context.CancelFunc{},
	}
	h, _ := r.Context().Value(connHolderKey{}).(*connHolder)
	if h != nil {
		h.set(c)
	}
	if !c.init() {
		c.finish(cancel)
		return
	}
	// The reader goes on a goroutine of its own, and the request's goroutine returns: its
	// stack grew through net/http, the middleware and the authentication, and an idle
	// connection would keep it for good. The connection's counts towards the limits go with
	// the reader.
	if h != nil {
		h.handOff()
	}
	go func() {
		defer func() {
			c.finish(cancel)
			if h != nil {
				h.release()
			}
		}()
		c.serve()
	}()
}

// wsBufferSize is the size of a connection's read and write buffers. net/http hands a
// hijacked connection over with 4 KiB buffers each, which an idle connection holds for good;
// msggate's messages are a few hundred bytes, and a longer one is read or written past the
// buffer, straight from or to the socket.
const wsBufferSize = 512

// smallBuffers is the response writer the WebSocket library hijacks: the connection it gets
// has wsBufferSize buffers instead of net/http's.
type smallBuffers struct {
	http.ResponseWriter
	socket *hijacked
}

// hijacked is a WebSocket connection's socket and the buffered reader the library reads it
// through.
type hijacked struct {
	conn net.Conn
	br   *bufio.Reader
}

func (w smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// What the client sent past the upgrade request is in net/http's buffer. It goes into the
	// new buffer (a copy, so that the large one is not kept for it): the WebSocket library
	// keeps what is buffered and reads the rest from the connection itself.
	n := brw.Reader.Buffered()
	early, _ := brw.Reader.Peek(n)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(wsBufferSize, n))
	if _, err := br.Peek(n); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	*w.socket = hijacked{conn: conn, br: br}
	// net/http has written the 101 answer by the time it hijacks: its writer holds nothing.
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, wsBufferSize)), nil
}

// finish ends the connection: its operations, its timers, and the socket, once a close
// handshake under way is over.
func (c *wsConnection) finish(cancel context.CancelFunc) {
	cancel()
	if c.t.sessions != nil {
		c.t.sessions.remove(c)
	}
	c.mu.Lock()
	c.stopTimersLocked()
	handshake := c.closeDone
	c.mu.Unlock()
	if handshake != nil {
		<-handshake
	}
	_ = c.conn.CloseNow()
}

// wsConnection is one WebSocket connection.
type wsConnection struct {
	t       *wsTransport
	conn    *websocket.Conn
	socket  hijacked // conn's own
	exec    graphql.GraphExecutor
	headers http.Header
	legacy  bool // graphql-ws rather than graphql-transport-ws
	// ctx is the connection's: authenticated once init succeeded, and ended when the reader
	// returns, which ends every operation on it.
	ctx context.Context

	mu        gosync.Mutex
	ops       map[string]context.CancelFunc // operations running, by id
	keepAlive *time.Timer                   // the next ping ("ka" in graphql-ws)
	// pongDue cuts the connection off when a ping was not answered in time (graphql-transport-ws).
	pongDue   *time.Timer
	closing   bool
	closeDone chan struct{} // closed when the close handshake is over
}

// wsMessage is a message of either protocol: they share the envelope.
type wsMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// read returns the next message; an error ends the connection (its cause has been dealt with).
func (c *wsConnection) read() (wsMessage, error) {
	_, data, err := c.conn.Read(context.Background())
	if err != nil {
		return wsMessage{}, err
	}
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
		c.close(CloseBadMessage, "invalid message: want a JSON object with a type")
		return wsMessage{}, errors.New("invalid message")
	}
	return m, nil
}

// init waits for connection_init and authenticates the connection with it.
func (c *wsConnection) init() bool {
	timeout := time.AfterFunc(wsInitTimeout, func() { c.close(CloseInitTimeout, "connection initialisation timeout") })
	m, err := c.read()
	timeout.Stop()
	if err != nil {
		return false
	}
	switch m.Type {
	case "connection_init":
	case "connection_terminate":
		c.close(closeNormal, "terminated")
		return false
	default:
		c.close(CloseBadMessage, fmt.Sprintf("unexpected message %q: connection_init comes first", m.Type))
		return false
	}
	var payload map[string]any
	if len(m.Payload) > 0 && !bytes.Equal(m.Payload, []byte("null")) {
		if err := json.Unmarshal(m.Payload, &payload); err != nil {
			c.close(CloseBadMessage, "invalid connection_init payload: want a JSON object")
			return false
		}
	}
	ctx, token, err := c.t.authenticate(c.ctx, payload, c.headers)
	if err != nil {
		var refused *wsRefusal
		if !errors.As(err, &refused) {
			refused = &wsRefusal{code: CloseUnauthorized, reason: "terminated", err: err}
		}
		// Presented whichever the protocol, so that the cause is logged either way.
		if answer := c.initErrorJSON(err); c.legacy {
			c.writeControl(wsMessage{Type: "connection_error", Payload: answer})
		}
		c.close(refused.code, refused.reason)
		return false
	}
	c.ctx = ctx
	// The upgrade request's headers served the authentication; an idle connection need not
	// hold them for good (an operation's are read by nothing of msggate's).
	c.headers = nil
	if c.t.sessions != nil && token != "" {
		c.t.sessions.add(c, token)
	}
	c.writeControl(wsMessage{Type: "connection_ack"})
	if interval := c.t.o.KeepAlive; interval > 0 {
		c.mu.Lock()
		if c.legacy {
			c.keepAlive = time.AfterFunc(0, c.sendKeepAlive)
		} else {
			c.keepAlive = time.AfterFunc(interval, c.ping)
		}
		c.mu.Unlock()
	}
	return true
}

// serve reads the client's messages until the connection closes.
func (c *wsConnection) serve() {
	for {
		c.awaitClient()
		m, err := c.read()
		if err != nil {
			return
		}
		start := graphql.Now()
		switch m.Type {
		case "subscribe", "start":
			if !c.start(m, start) {
				return
			}
		case "complete", "stop":
			c.mu.Lock()
			cancel := c.ops[m.ID]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case "ping":
			c.writeControl(wsMessage{Type: "pong", Payload: m.Payload})
		case "pong":
			c.mu.Lock()
			if c.pongDue != nil {
				c.pongDue.Stop()
				c.pongDue = nil
			}
			c.mu.Unlock()
		case "connection_terminate":
			c.close(closeNormal, "terminated")
			return
		case "connection_init":
			c.close(CloseTooManyInits, "too many initialisation requests")
			return
		default:
			c.close(CloseBadMessage, fmt.Sprintf("unexpected message %q", m.Type))
			return
		}
	}
}

// awaitClient waits, at shallow depth, until the client has sent something: the WebSocket
// library's read waits far deeper, on a stack that garbage collections could then never
// halve. Not once a close handshake has begun: the library then reads the socket and its
// buffer itself, on the closing goroutine (the lock orders this look at the buffer before
// the handshake's reads). A wait under way when one begins ends with the client's answer or
// with the socket's close, and the library's read then reports the close.
func (c *wsConnection) awaitClient() {
	c.mu.Lock()
	wait := c.closeDone == nil && c.socket.br != nil && c.socket.br.Buffered() == 0
	c.mu.Unlock()
	if wait {
		freshstack.AwaitReadable(c.socket.conn)
	}
}

// start begins operation m on a goroutine of its own; false when the connection must end.
func (c *wsConnection) start(m wsMessage, start time.Time) bool {
	if m.ID == "" {
		c.close(CloseBadMessage, m.Type+" needs an id")
		return false
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	if _, dup := c.ops[m.ID]; dup {
		c.mu.Unlock()
		cancel()
		c.close(CloseDuplicateID, fmt.Sprintf("subscriber for %s already exists", m.ID))
		return false
	}
	c.ops[m.ID] = cancel
	c.mu.Unlock()
	go c.operate(ctx, cancel, m.ID, m.Payload, start)
	return true
}

// operate runs one operation and sends its answers: one for a query or mutation, one per
// event for a subscription, then "complete" (unless the connection is closing: a client
// takes "complete" for a normal end and would not resubscribe).
func (c *wsConnection) operate(ctx context.Context, cancel context.CancelFunc, id string, payload json.RawMessage, start time.Time) {
	// The id is free again before "complete" goes out: a client may reuse it at once (and
	// once freed, the id is no longer this operation's to free).
	freed := false
	done := func() {
		if freed {
			return
		}
		freed = true
		c.mu.Lock()
		delete(c.ops, id)
		c.mu.Unlock()
		cancel()
	}
	// A subscription's goroutine lives as long as it does, mostly idle: what goes deep (the
	// request's decoding, parsing and validation, the resolvers, encoding and writing an
	// answer) runs on short-lived goroutines, so that its stack stays small without waiting
	// for garbage collections to shrink it.
	pump := &streamPump{}
	var responses graphql.ResponseHandler
	var rc *graphql.OperationContext
	answered := false
	defer func() {
		if r := recover(); r != nil {
			gqlErr := &gqlerror.Error{Message: "internal system error"}
			if rc != nil {
				if err := rc.Recover(ctx, r); !errors.As(err, &gqlErr) {
					gqlErr = &gqlerror.Error{Message: "internal system error"}
				}
			}
			done()
			c.sendErrors(id, gqlerror.List{gqlErr})
		}
		done()
		if !answered && c.ctx.Err() == nil && !c.isClosing() {
			c.complete(id)
		}
	}()
	freshstack.Run(func() { responses, rc, ctx = c.prepare(ctx, id, payload, start, pump, done) })
	if responses == nil {
		answered = true // prepare answered it, complete included
		return
	}
	emit := func() bool {
		ok := false
		freshstack.Run(func() {
			if resp := responses(ctx); resp != nil {
				c.next(id, resp)
				ok = true
			}
		})
		return ok
	}
	if pump.run != nil {
		pump.run(emit)
		return
	}
	for emit() {
	}
}

// prepare takes the operation's rate-limit token, then decodes, parses and validates
// operation id and dispatches it: it returns its answers' handler, or nil once it has
// answered an operation that cannot run (with done called first).
func (c *wsConnection) prepare(ctx context.Context, id string, payload json.RawMessage, start time.Time,
	pump *streamPump, done func()) (graphql.ResponseHandler, *graphql.OperationContext, context.Context) {
	ctx = graphql.StartOperationTrace(ctx)
	if refused := takeOperationToken(ctx); refused != nil {
		resp := c.exec.DispatchError(ctx, gqlerror.List{refused})
		done()
		c.next(id, resp)
		c.complete(id)
		return nil, nil, ctx
	}
	params := &graphql.RawParams{}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(params); err != nil {
		done()
		c.sendErrors(id, gqlerror.List{{Message: "invalid json"}})
		c.complete(id)
		return nil, nil, ctx
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	params.Headers = c.headers
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		done()
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			c.sendErrors(id, resp.Errors)
		} else {
			c.next(id, &graphql.Response{Errors: errs})
		}
		c.complete(id)
		return nil, nil, ctx
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	pump.holder, _ = ctx.Value(connHolderKey{}).(*connHolder)
	ctx = graph.WithSubscriptionConn(ctx, pump)
	responses, ctx := c.exec.DispatchOperation(ctx, rc)
	return responses, rc, ctx
}

// streamPump is an operation's graph.SubscriptionConn: it lets a subscription resolver run
// its stream on the operation's goroutine instead of a goroutine of its own feeding a channel
// (run, set by PumpStream), one goroutine per subscription where a channel between two would
// need two; and it reaches the operation's connection through its holder.
type streamPump struct {
	run    func(emit func() bool)
	holder *connHolder // nil when the connection has none
}

var _ graph.SubscriptionConn = (*streamPump)(nil)

// PumpStream takes run for the operation's goroutine, unless a resolver took it already.
func (p *streamPump) PumpStream(run func(emit func() bool)) bool {
	if p.run != nil {
		return false
	}
	p.run = run
	return true
}

func (p *streamPump) OpenSubscription() (release func(), err error) {
	if p.holder == nil {
		return func() {}, nil
	}
	return p.holder.openSubscription()
}

func (p *streamPump) Close(code int, reason string) {
	if p.holder != nil {
		p.holder.close(code, reason)
	}
}

// next writes one answer of operation id. It may wait for a slow reader: a subscription
// bounds that itself (a slow consumer is closed, which ends the write).
func (c *wsConnection) next(id string, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(&graphql.Response{Errors: gqlerror.List{{Message: "the answer could not be encoded"}}})
	}
	typ := "next"
	if c.legacy {
		typ = "data"
	}
	c.write(context.Background(), wsMessage{Type: typ, ID: id, Payload: b})
}

func (c *wsConnection) complete(id string) {
	c.writeControl(wsMessage{Type: "complete", ID: id})
}

func (c *wsConnection) sendErrors(id string, errs gqlerror.List) {
	b, err := json.Marshal(errs)
	if err != nil {
		return
	}
	c.writeControl(wsMessage{Type: "error", ID: id, Payload: b})
}

// writeControl writes a protocol message, giving up (and so closing the connection) on a
// peer that has not taken it within wsControlWriteLimit.
func (c *wsConnection) writeControl(m wsMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), wsControlWriteLimit)
	defer cancel()
	c.write(ctx, m)
}

func (c *wsConnection) write(ctx context.Context, m wsMessage) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	_ = c.conn.Write(ctx, websocket.MessageText, b)
}

// initErrorJSON is the connection_error payload (graphql-ws) of a refused connection_init:
// what HTTP answers for the same error, its message and code, while a cause such as a store's
// address or a dial error goes only to the log (errorPresenter). A refusal the transport made
// itself, with no domain error behind it (no token, pacing), shows its reason.
func (c *wsConnection) initErrorJSON(err error) json.RawMessage {
	if refused, ok := errors.AsType[*wsRefusal](err); ok {
		_, domain := errors.AsType[*im.Error](refused.err)
		_, limit := refused.err.(*gqlerror.Error)
		if !domain && !limit {
			return gqlErrorJSON(refused.reason)
		}
		err = refused.err
	}
	b, _ := json.Marshal(graph.ErrorPresenter(c.t.o.Logger)(c.ctx, err))
	return b
}

func gqlErrorJSON(message string) json.RawMessage {
	b, _ := json.Marshal(&gqlerror.Error{Message: message})
	return b
}

var (
	pingMessage      = []byte(`{"type":"ping"}`)
	keepAliveMessage = []byte(`{"type":"ka"}`)
)

// ping sends a graphql-transport-ws ping and schedules the next. A connection that has not
// answered with a pong within two intervals is cut off; the deadline is armed before the ping
// goes out, so that a quick pong cannot clear it first.
func (c *wsConnection) ping() {
	interval := c.t.o.KeepAlive
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.pongDue == nil {
		c.pongDue = time.AfterFunc(2*interval, func() { _ = c.conn.CloseNow() })
	}
	c.mu.Unlock()
	c.keepAliveWrite(pingMessage, c.ping)
}

// sendKeepAlive sends a graphql-ws "ka" and schedules the next.
func (c *wsConnection) sendKeepAlive() { c.keepAliveWrite(keepAliveMessage, c.sendKeepAlive) }

func (c *wsConnection) keepAliveWrite(msg []byte, again func()) {
	interval := c.t.o.KeepAlive
	ctx, cancel := context.WithTimeout(context.Background(), interval)
	err := c.conn.Write(ctx, websocket.MessageText, msg)
	cancel()
	if err != nil {
		_ = c.conn.CloseNow()
		return
	}
	c.mu.Lock()
	if !c.closing {
		c.keepAlive = time.AfterFunc(interval, again)
	}
	c.mu.Unlock()
}

func (c *wsConnection) stopTimersLocked() {
	c.closing = true
	if c.keepAlive != nil {
		c.keepAlive.Stop()
	}
	if c.pongDue != nil {
		c.pongDue.Stop()
		c.pongDue = nil
	}
}

func (c *wsConnection) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// close starts the close handshake with code and reason, in the background: the handshake
// waits up to 5 s for the peer, which no caller should. A second close does nothing.
func (c *wsConnection) close(code int, reason string) {
	c.mu.Lock()
	if c.closeDone != nil {
		c.mu.Unlock()
		return
	}
	c.stopTimersLocked()
	done := make(chan struct{})
	c.closeDone = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		_ = c.conn.Close(websocket.StatusCode(code), reason)
	}()
}

// wsRefusal is why connection_init was refused, and how the connection is closed for it.
type wsRefusal struct {
	code   int
	reason string
	err    error
}

func (r *wsRefusal) Error() string {
	if r.err != nil {
		return r.err.Error()
	}
	return r.reason
}

func (r *wsRefusal) Unwrap() error { return r.err }
