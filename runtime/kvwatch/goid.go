package kvwatch

import "runtime"

// goroutineID returns the calling goroutine's number, from the first line
// of its stack trace ("goroutine 18 [running]:"). Go gives goroutines no
// identity on purpose, but a watcher must know whether a call comes from
// one of its handlers, which run on its event goroutine: a call that
// waited for that goroutine there would wait forever. Only such calls pay
// for it (about a microsecond), never the delivery of an event.
func goroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	if n <= len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
