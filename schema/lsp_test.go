package schema_test

// A small Language Server Protocol client, enough to drive the YAML
// language server over stdio in editor_test.go: JSON-RPC messages framed by
// Content-Length headers, requests with responses, notifications, and
// the server's own requests answered with null.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// lspTimeout bounds every wait for the server.
const lspTimeout = 60 * time.Second

type rpcMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"` // UTF-16 code units; the documents here are ASCII
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspDiagnostic struct {
	Range    lspRange `json:"range"`
	Severity int      `json:"severity"`
	Source   string   `json:"source"`
	Message  string   `json:"message"`
}

type lspPublishDiagnostics struct {
	URI         string          `json:"uri"`
	Version     *int            `json:"version"`
	Diagnostics []lspDiagnostic `json:"diagnostics"`
}

type lspHover struct {
	Contents struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	} `json:"contents"`
}

type lspClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr syncBuffer
	wmu    sync.Mutex // one message written at a time

	mu      sync.Mutex
	nextID  int
	pending map[int]chan rpcMessage
	diags   map[string][]lspPublishDiagnostics // every publish, by document URI
	notify  chan struct{}                      // closed and replaced on every publish
	readErr error                              // why the reader stopped
	done    chan struct{}                      // closed when the reader stops
}

// startLSP starts `node server --stdio` and returns a client for it; the
// server is shut down when the test ends.
func startLSP(t *testing.T, node, server string) *lspClient {
	t.Helper()
	c := &lspClient{
		t:       t,
		cmd:     exec.Command(node, server, "--stdio"),
		pending: map[int]chan rpcMessage{},
		diags:   map[string][]lspPublishDiagnostics{},
		notify:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting the YAML language server: %v", err)
	}
	go c.read(bufio.NewReader(stdout))
	t.Cleanup(c.stop)
	return c
}

// stop asks the server to shut down and exit, and kills it when it does not.
func (c *lspClient) stop() {
	c.mu.Lock()
	running := c.readErr == nil
	c.mu.Unlock()
	if running {
		c.callTimeout("shutdown", nil, nil, 5*time.Second)
		c.send(rpcMessage{Method: "exit"})
	}
	c.stdin.Close()
	exited := make(chan struct{})
	go func() { c.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-exited
	}
	if out := c.stderr.String(); c.t.Failed() && out != "" {
		c.t.Logf("the server's stderr:\n%s", out)
	}
}

func (c *lspClient) read(r *bufio.Reader) {
	defer close(c.done)
	tp := textproto.NewReader(r)
	for {
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			c.fail(fmt.Errorf("reading a header: %w", err))
			return
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			c.fail(fmt.Errorf("bad Content-Length %q", h.Get("Content-Length")))
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			c.fail(fmt.Errorf("reading a message: %w", err))
			return
		}
		var m rpcMessage
		if err := json.Unmarshal(body, &m); err != nil {
			c.fail(fmt.Errorf("decoding %s: %w", body, err))
			return
		}
		switch {
		case m.ID != nil && m.Method != "": // a request of the server's: answer null
			c.send(rpcMessage{ID: m.ID, Result: json.RawMessage("null")})
		case m.ID != nil: // a response
			var id int
			if err := json.Unmarshal(*m.ID, &id); err == nil {
				c.mu.Lock()
				ch := c.pending[id]
				delete(c.pending, id)
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			}
		case m.Method == "textDocument/publishDiagnostics":
			var p lspPublishDiagnostics
			if err := json.Unmarshal(m.Params, &p); err != nil {
				c.fail(err)
				return
			}
			c.mu.Lock()
			c.diags[p.URI] = append(c.diags[p.URI], p)
			close(c.notify)
			c.notify = make(chan struct{})
			c.mu.Unlock()
		}
	}
}

func (c *lspClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readErr = err
}

func (c *lspClient) send(m rpcMessage) {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fmt.Fprintf(c.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
}

func (c *lspClient) notification(method string, params any) {
	c.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(rpcMessage{Method: method, Params: p})
}

// call sends a request and decodes its result into result (unless nil).
func (c *lspClient) call(method string, params, result any) {
	c.t.Helper()
	if err := c.callTimeout(method, params, result, lspTimeout); err != nil {
		c.t.Fatalf("%s: %v\nthe server's stderr:\n%s", method, err, c.stderr.String())
	}
}

func (c *lspClient) callTimeout(method string, params, result any, timeout time.Duration) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan rpcMessage, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	raw := json.RawMessage(strconv.Itoa(id))
	c.send(rpcMessage{ID: &raw, Method: method, Params: p})
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-c.done:
		return fmt.Errorf("the server stopped: %v", c.readErr)
	case <-time.After(timeout):
		return fmt.Errorf("no answer in %v", timeout)
	}
}

// initialize runs the LSP handshake and sends the YAML settings: no schema
// store (this machine may have no network), validation and hover on.
func (c *lspClient) initialize(rootURI string) {
	c.t.Helper()
	c.call("initialize", map[string]any{
		"processId": nil,
		"rootUri":   rootURI,
		"capabilities": map[string]any{
			"textDocument": map[string]any{
				"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"publishDiagnostics": map[string]any{},
			},
		},
	}, nil)
	c.notification("initialized", map[string]any{})
	c.notification("workspace/didChangeConfiguration", map[string]any{
		"settings": map[string]any{"yaml": map[string]any{
			"validate":    true,
			"hover":       true,
			"completion":  true,
			"schemaStore": map[string]any{"enable": false},
		}},
	})
}

func (c *lspClient) open(uri, text string) {
	c.t.Helper()
	c.notification("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": text},
	})
}

// diagnostics waits until the server has published diagnostics for uri that
// done accepts, and returns them; on a timeout it fails the test, showing
// the last ones published.
func (c *lspClient) diagnostics(uri string, done func([]lspDiagnostic) bool) []lspDiagnostic {
	c.t.Helper()
	deadline := time.After(lspTimeout)
	for {
		c.mu.Lock()
		published, notify := c.diags[uri], c.notify
		c.mu.Unlock()
		for _, p := range published {
			if done(p.Diagnostics) {
				return p.Diagnostics
			}
		}
		select {
		case <-notify:
		case <-c.done:
			c.t.Fatalf("the server stopped: %v", c.readErr)
		case <-deadline:
			var last []lspDiagnostic
			if len(published) > 0 {
				last = published[len(published)-1].Diagnostics
			}
			c.t.Fatalf("no expected diagnostics for %s in %v; the last published:\n%s", uri, lspTimeout, formatDiagnostics(last))
		}
	}
}

func (c *lspClient) hover(uri string, line, character int) string {
	c.t.Helper()
	var h *lspHover
	c.call("textDocument/hover", map[string]any{
		"textDocument": map[string]any{"uri": uri},
		"position":     lspPosition{Line: line, Character: character},
	}, &h)
	if h == nil {
		return ""
	}
	return h.Contents.Value
}

// syncBuffer is a bytes.Buffer that the server's stderr is copied into
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func formatDiagnostics(ds []lspDiagnostic) string {
	var b bytes.Buffer
	for _, d := range ds {
		fmt.Fprintf(&b, "  %d:%d: %s\n", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Message)
	}
	if len(ds) == 0 {
		b.WriteString("  (none)\n")
	}
	return b.String()
}
