package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// indexProperty is the contract's user property on every message: its index in the set.
const indexProperty = "matrix-index"

// expected is what a consumer must find in one received message.
type expected struct {
	Body  []byte            `json:"body"`
	Tag   string            `json:"tag"`
	Keys  []string          `json:"keys"`
	Props map[string]string `json:"props"`
	// MsgID is the id the send returned (empty where the send returns none).
	MsgID string `json:"msgId"`
	// Queue and QueueOffset are where a sync send put it.
	Queue       int   `json:"queue"`
	QueueOffset int64 `json:"queueOffset"`
}

// newExpected is the contract's default message i of a scenario: body
// `matrix-<scenario>-<i>`, tag TagA, key `key-<i>`, property matrix-index=<i>.
func newExpected(scenario string, i int) expected {
	return expected{
		Body:  []byte(fmt.Sprintf("matrix-%s-%d", scenario, i)),
		Tag:   "TagA",
		Keys:  []string{fmt.Sprintf("key-%d", i)},
		Props: map[string]string{indexProperty: strconv.Itoa(i)},
	}
}

// crossExpected is message i of the cross-client set (cross-produce / cross-consume).
func crossExpected(i int) expected {
	return expected{
		Body:  []byte(fmt.Sprintf("cross-%d", i)),
		Tag:   "cross",
		Keys:  []string{fmt.Sprintf("cross-key-%d", i)},
		Props: map[string]string{indexProperty: strconv.Itoa(i)},
	}
}

func (x expected) message(topic string) *primitive.Message {
	m := primitive.NewMessage(topic, x.Body)
	m.WithTag(x.Tag)
	m.WithKeys(x.Keys)
	for k, v := range x.Props {
		m.WithProperty(k, v)
	}
	return m
}

// id names a message within its set independently of the msgId: the index property.
func (x expected) id() string { return x.Props[indexProperty] }

// check compares a received message with what was sent.
func (x expected) check(got *primitive.MessageExt) error {
	if !bytes.Equal(got.Body, x.Body) {
		return fmt.Errorf("message %s: body differs (%d bytes received, %d sent)", x.id(), len(got.Body), len(x.Body))
	}
	if got.GetTags() != x.Tag {
		return fmt.Errorf("message %s: tag %q, sent %q", x.id(), got.GetTags(), x.Tag)
	}
	if keys := strings.Fields(got.GetKeys()); strings.Join(keys, " ") != strings.Join(x.Keys, " ") {
		return fmt.Errorf("message %s: keys %q, sent %q", x.id(), got.GetKeys(), x.Keys)
	}
	for k, v := range x.Props {
		if got.GetProperty(k) != v {
			return fmt.Errorf("message %s: property %s=%q, sent %q", x.id(), k, got.GetProperty(k), v)
		}
	}
	if x.MsgID != "" && got.MsgId != x.MsgID {
		return fmt.Errorf("message %s: msgId %s, the send returned %s", x.id(), got.MsgId, x.MsgID)
	}
	return nil
}

// messageSet is a set of sent messages keyed by their index property.
type messageSet map[string]expected

func newSet(xs []expected) messageSet {
	s := messageSet{}
	for _, x := range xs {
		s[x.id()] = x
	}
	return s
}

func (s messageSet) ids() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// saveState and loadState keep sets between the phases of one scenario (and for the child
// process of offsets-consumer-restart) in MATRIX_STATE.
func saveState(e *env, name string, v interface{}) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.state, name), data, 0o644)
}

func loadState(e *env, name string, v interface{}) error {
	data, err := os.ReadFile(filepath.Join(e.state, name))
	if err != nil {
		return fmt.Errorf("state of an earlier phase: %w", err)
	}
	return json.Unmarshal(data, v)
}
