package kvwatchimpl

import "strings"

// ackMeta is what the runtime needs from a JetStream message's reply
// subject: the stream and consumer sequences, the timestamp and the number
// of messages still pending. jetstream.Msg.Metadata parses the same into a
// new struct per message; this does it without allocating, which shows on
// the hot path of a busy watcher.
type ackMeta struct {
	streamSeq, consumerSeq, pending uint64
	timestamp                       int64 // Unix nanoseconds
}

// parseAckMeta parses a reply subject of either form the server sends:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
func parseAckMeta(reply string) (ackMeta, bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return ackMeta{}, false
	}
	var tokens [12]string
	n := 0
	for n < len(tokens) {
		tok, after, more := strings.Cut(rest, ".")
		tokens[n] = tok
		n++
		if !more {
			break
		}
		rest = after
	}
	// Tokens after "$JS.ACK.": 7 in the old form; in the new one 9, plus
	// a trailing token the server may drop or extend (nats.go accepts 9 or
	// more), the stream being the third.
	first := 0
	switch {
	case n == 7:
	case n >= 9:
		first = 2
	default:
		return ackMeta{}, false
	}
	t := tokens[first:]
	m := ackMeta{
		streamSeq:   parseUint(t[3]),
		consumerSeq: parseUint(t[4]),
		timestamp:   int64(parseUint(t[5])),
		pending:     parseUint(t[6]),
	}
	return m, true
}

// parseUint parses a decimal number; malformed input gives 0.
func parseUint(s string) uint64 {
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
