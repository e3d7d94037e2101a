package jslog

import (
	"strconv"

	"github.com/nats-io/nats.go"
)

// natsMsg builds the message of one append.
type natsMsg struct {
	subject string
	data    []byte
	seq     uint64
}

func (m *natsMsg) nats() *nats.Msg {
	msg := nats.NewMsg(m.subject)
	msg.Data = m.data
	msg.Header.Set(SeqHeader, strconv.FormatUint(m.seq, 10))
	return msg
}
